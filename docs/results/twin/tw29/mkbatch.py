#!/usr/bin/env python3
"""twin29: twin25's batch file (lost with /var/tmp on a reprovisioned VM, rewritten): a raw
calibration with batch_completion = true (issue 29, twin8: not visible from the guest, so not
measured) and its name, nothing else changed; with --nofrag also without the free blocks below
the reporting order (host_free_order*_kib: the twin29 mechanism off, as a control).
Usage: mkbatch.py RAW TAG OUT [--nofrag]"""
import re, sys
raw, tag, out = sys.argv[1:4]
nofrag = "--nofrag" in sys.argv[4:]
text = open(raw).read()
head = (f"# {raw.split('/')[-1]} (forefront bench calibrate, as written) with batch_completion = true (issue 29, twin8: the host's completions of\n"
        "# the shared stage's commands reach the guest when its queue has drained; not visible from the guest, so not measured) and its name."
        + (" Without its host_free_order*_kib figures (twin29's control).\n" if nofrag else " Nothing else is changed.\n"))
text = re.sub(r'^name = ".*"$', f'name = "{tag}"', text, count=1, flags=re.M)
text = re.sub(r'^(rotational = .*)$', r'\1\nbatch_completion = true', text, count=1, flags=re.M)
if nofrag:
    text = re.sub(r'\[provenance\.fields\.host_free_order\d_kib\]\n(?:(?!\[).*\n)*', "", text)
open(out, "w").write(head + text)

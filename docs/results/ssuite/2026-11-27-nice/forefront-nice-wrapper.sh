#!/bin/sh
# the v12 build at nice -10 (every invocation: the agent, and the CLI calls the suite makes)
exec nice -n -10 /var/tmp/ff-ssuite/bin-v12/forefront "$@"

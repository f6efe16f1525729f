//! The shared network link inside a whole simulation: a transfer waits one round trip, then
//! every transfer in progress gets an equal share of the link's rate.

use forefront_policy::Policy;
use forefront_sim::{run, RunConfig};
use forefront_workload::{load_device, Scenario};

/// `threads` FG threads each receive `bytes` at time 0 on a `mb_s` link with `rtt_ms`; the
/// headline samples are their transfer times (ms).
fn transfers(threads: usize, bytes: &str, phone: &str) -> Vec<f64> {
    let mut text = format!(
        "name = 'n'\ndescription = 'd'\nheadline = 'dl'\ndevice = 'galaxy-s5-emmc'\nduration_s = 60.0\n[phone]\n{phone}\n\
         [[app]]\nname = 'a'\nrole = 'fg'\n"
    );
    for t in 0..threads {
        text.push_str(&format!(
            "[[app.thread]]\nname = 't{t}'\nops = [{{ op = 'phase_begin', name = 'dl' }}, {{ op = 'net_recv', bytes = '{bytes}' }}, {{ op = 'phase_end', name = 'dl' }}]\n"
        ));
    }
    let sc = Scenario::parse("net.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    let cfg = RunConfig {
        scenario: sc,
        device: load_device("galaxy-s5-emmc").unwrap(),
        policy: Policy::by_name("android").unwrap(),
        bg_apps: 0,
        seed: 1,
    };
    let r = run(&cfg);
    assert_eq!(r.invariants.tasks_blocked_without_waker, 0);
    r.metrics.fg_samples_ms
}

#[test]
fn one_transfer_takes_a_round_trip_then_its_bytes_at_the_full_rate() {
    let t = transfers(1, "1MB", "net_mb_s = 1.0\nnet_rtt_ms = 50.0");
    assert_eq!(t.len(), 1);
    assert!((t[0] - 1050.0).abs() < 1.0, "{t:?}");
}

#[test]
fn concurrent_transfers_share_the_link_fairly() {
    // Three equal transfers at once: each at a third of the rate, all done together at 3x.
    let t = transfers(3, "1MB", "net_mb_s = 1.0\nnet_rtt_ms = 0.0");
    assert_eq!(t.len(), 3);
    for x in &t {
        assert!((x - 3000.0).abs() < 1.0, "{t:?}");
    }
}

#[test]
fn presets_set_rate_and_round_trip_and_usb_is_ten_times_the_wifi() {
    let wifi = transfers(1, "2500000", "net_link = 'wifi-bg'");
    let usb = transfers(1, "2500000", "net_link = 'usb-tether'");
    // 2.5 MB: 1 s + 20 ms over WiFi, 0.1 s + 2 ms over USB.
    assert!((wifi[0] - 1020.0).abs() < 1.0, "{wifi:?}");
    assert!((usb[0] - 102.0).abs() < 1.0, "{usb:?}");
    let e = Scenario::parse(
        "x.toml",
        "name='x'\ndescription='d'\nheadline='p'\ndevice='galaxy-s5-emmc'\nduration_s=1\n[phone]\nnet_link='wifi-b'\n\
         [[app]]\nname='a'\nrole='fg'\n[[app.thread]]\nname='m'\nops=[{op='phase_begin', name='p'}, {op='phase_end', name='p'}]\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("unknown link `wifi-b`") && e.contains("did you mean `wifi-bg`"), "{e}");
}

#[test]
fn round_trips_scatter_around_the_links_rtt_with_net_rtt_cv() {
    // 200 threads each wait one round trip for 1 byte on a fast link: the samples are the RTTs.
    let fixed = transfers(200, "1", "net_mb_s = 1000.0\nnet_rtt_ms = 100.0");
    assert!(fixed.iter().all(|x| (x - 100.0).abs() < 0.5), "{fixed:?}");
    let spread = transfers(200, "1", "net_mb_s = 1000.0\nnet_rtt_ms = 100.0\nnet_rtt_cv = 0.5");
    let mean = spread.iter().sum::<f64>() / spread.len() as f64;
    let sd = (spread.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / spread.len() as f64).sqrt();
    // Log-normal of mean 1 and cv 0.5: the mean stays near 100 ms, the spread near 50 ms.
    assert!((85.0..115.0).contains(&mean), "mean {mean}");
    assert!((35.0..65.0).contains(&(sd)), "sd {sd}");
    let bad = Scenario::parse(
        "x.toml",
        "name='x'\ndescription='d'\nheadline='p'\ndevice='galaxy-s5-emmc'\nduration_s=1\n[phone]\nnet_rtt_cv=-1\n\
         [[app]]\nname='a'\nrole='fg'\n[[app.thread]]\nname='m'\nops=[{op='phase_begin', name='p'}, {op='phase_end', name='p'}]\n",
    );
    assert!(bad.unwrap_err().to_string().contains("net_rtt_cv"));
}

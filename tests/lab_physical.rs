//! The physical layer on the lab: real lldpd on every host, firmware and PCIe links in the
//! hosts' sysfs, cables proven by who answers, firmware and PCIe drift, and (on the Slurm lab)
//! bad nodes drained and resumed. Needs root, like every lab test.

mod lab;

use std::time::Duration;

use lab::{Lab, LabSpec, PcieLink, lab_enabled};

/// The lab itself: lldpd runs on each host with its own socket at the standard path, hears its
/// cable's far end within seconds, and is stopped with the lab; sysfs carries the firmware, the
/// board id, the PCIe link and the driver where a real host keeps them.
#[test]
fn lab_hosts_run_lldpd_and_carry_firmware_and_pcie() {
    if !lab_enabled() {
        return;
    }
    let spec = LabSpec::new("ph0")
        .host("host-a")
        .host("host-b")
        .direct_pair("host-a", "host-b", 1)
        .firmware("host-b", "28.39.2048")
        .pcie(
            "host-a",
            "roceP2p1s0f0",
            PcieLink::trained("32.0 GT/s PCIe", 2, 4),
        )
        .lldp();
    let lab = Lab::build(&spec).expect("lab");
    lab.wait_lldp(Duration::from_secs(30))
        .expect("LLDP neighbours");
    let seen = lab.lldp_neighbours("host-a");
    assert!(seen.contains("\"host-b\""), "{seen}");
    assert!(seen.contains("enP2p1s0f0np0"), "{seen}");
    let read = |host: &str, cmd: &str| {
        let out = lab.ssh(host, cmd);
        assert!(out.status.success(), "{cmd}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let d = "/sys/class/infiniband/roceP2p1s0f0";
    assert_eq!(read("host-a", &format!("cat {d}/fw_ver")), "28.45.1200");
    assert_eq!(read("host-b", &format!("cat {d}/fw_ver")), "28.39.2048");
    assert_eq!(
        read("host-a", &format!("cat {d}/board_id")),
        "MT_0000000970"
    );
    assert_eq!(
        read(
            "host-a",
            &format!("cat {d}/device/current_link_width {d}/device/max_link_width")
        ),
        "2\n4"
    );
    assert_eq!(
        read("host-a", &format!("cd -P {d}/device && basename \"$PWD\"")),
        "0002:01:00.0"
    );
    assert_eq!(
        read(
            "host-a",
            &format!("basename \"$(readlink {d}/device/driver)\"")
        ),
        "mlx5_core"
    );
    // the standard socket answers on the host, with no option
    let config = read("host-b", "lldpcli show configuration");
    assert!(config.contains("Transmit delay: 1"), "{config}");
    let fp = lab.footprint();
    drop(lab);
    assert!(fp.remaining().is_empty(), "{:?}", fp.remaining());
}

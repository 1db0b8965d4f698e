//! `cloudscale-cloud-controller-manager`: wires configuration, clients and controllers.

fn main() {
    eprintln!("cloudscale-cloud-controller-manager: not wired yet");
    std::process::exit(2);
}

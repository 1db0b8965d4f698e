//! `cloudscale-cloud-controller-manager`: see [`ccm::cli`].

fn main() -> std::process::ExitCode {
    ccm::cli::main()
}

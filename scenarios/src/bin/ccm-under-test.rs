//! The CCM binary for the testbed's process tests: exactly `cloudscale-cloud-controller-manager`
//! (`ccm::cli::main`), built as a binary of this package so its tests can run it.

fn main() -> std::process::ExitCode {
    ccm::cli::main()
}

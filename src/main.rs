//! `lnk`: the sandbox helper. A thin dispatcher; the work is in the library's modules.

fn main() -> std::process::ExitCode {
    lnk::sys::ensure_standard_fds();
    let args: Vec<String> = match std::env::args_os().skip(1).map(|a| a.into_string()).collect() {
        Ok(args) => args,
        Err(bad) => {
            eprintln!("lnk: an argument is not valid UTF-8: {}", bad.to_string_lossy());
            return std::process::ExitCode::from(lnk::exit::USAGE);
        }
    };
    lnk::cli::main(&args)
}

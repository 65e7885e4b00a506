//! swctl: the Lossless operator's CLI.

use anyhow::Context;
use clap::{Parser, Subcommand};
use lossless_dataplane::model::config::{ConfigDb, compile};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "swctl", version, about = "Configure and observe Lossless switches, SONiC style")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Walk through the switch model on the embedded T0 configuration (in-process, virtual time).
    Demo,
    /// Validate a configuration file (SONiC-like YAML or config_db.json); lists every error as TABLE|key|field.
    Validate {
        /// The configuration file.
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("swctl: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Demo => {
            print!("{}", lossless_controlplane::demo::run()?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Validate { file } => {
            let text =
                std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            let db = ConfigDb::from_yaml_str(&text)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("parsing {}", file.display()))?;
            match compile(&db) {
                Ok(compiled) => {
                    for w in &compiled.warnings {
                        println!("warning: {w}");
                    }
                    println!("{}: valid ({} warning(s))", file.display(), compiled.warnings.len());
                    Ok(ExitCode::SUCCESS)
                }
                Err(errors) => {
                    for e in &errors.errors {
                        println!("error: {e}");
                    }
                    for w in &errors.warnings {
                        println!("warning: {w}");
                    }
                    println!("{}: invalid ({} error(s))", file.display(), errors.errors.len());
                    Ok(ExitCode::FAILURE)
                }
            }
        }
    }
}

//! Build script: where the `report` feature links DuckDB's prebuilt shared library
//! (`DUCKDB_LIB_DIR`, set by `make` from `scripts/duckdb.sh`), every binary and test gets an
//! rpath to it, so `age2048` runs from any directory without `LD_LIBRARY_PATH`.
use std::env;

fn main() {
    println!("cargo:rerun-if-env-changed=DUCKDB_LIB_DIR");
    let report = env::var_os("CARGO_FEATURE_REPORT").is_some();
    let bundled = env::var_os("CARGO_FEATURE_BUNDLED").is_some();
    if !report || bundled {
        return;
    }
    match env::var("DUCKDB_LIB_DIR") {
        Ok(dir) if !dir.is_empty() => {
            if env::var("CARGO_CFG_TARGET_FAMILY").as_deref() == Ok("unix") {
                println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
            }
        }
        _ => {
            eprintln!(
                "age2048: the `report` feature links DuckDB's prebuilt library: build with `make` \
                 (it fetches the library, see scripts/duckdb.sh), or set DUCKDB_LIB_DIR, or \
                 build with `--features bundled` (compiles DuckDB, ~30 min)"
            );
            std::process::exit(1);
        }
    }
}

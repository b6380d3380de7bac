//! Trusting the data (issue 7), through the real binary in temporary directories: one writer
//! per data directory, every damaged file detected (by `verify`, by the readers, or solved
//! again), work files checked on resume, and no panic on hostile input.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};

use crate::common::{self, bin, run, stderr, stdout};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn solve(data: &Path, board: &str, extra: &[&str]) -> Output {
    let mut args = vec!["solve", "--board", board, "--data", s(data), "--quiet"];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "solve {board} failed: {}", stderr(&o));
    o
}

fn manifest(data: &Path, board: &str) -> serde_json::Value {
    common::manifest(data, board, "expectation")
}

/// The files a manifest lists, with their digests (what "the same solve" means).
fn digests(data: &Path, board: &str) -> serde_json::Value {
    manifest(data, board)["files"].clone()
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

fn no_panic(o: &Output) {
    let e = stderr(o);
    assert!(!e.contains("panicked"), "panic: {e}");
    assert_ne!(o.status.code(), Some(101), "panic exit: {e}");
}

/// Exit 2 with stderr naming `needle`, on one line, no panic.
fn refused(o: &Output, needle: &str) -> bool {
    no_panic(o);
    let e = stderr(o);
    o.status.code() == Some(2) && e.contains(needle) && e.trim().lines().count() == 1
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: sending a signal to our own child process, whose id we hold.
    let r = unsafe { libc::kill(child.id() as i32, sig) };
    assert_eq!(r, 0, "kill({}, {sig})", child.id());
}

/// A `solve` whose progress lines come over a pipe.
fn spawn_solve(data: &Path, board: &str, extra: &[&str]) -> (Child, impl Iterator<Item = String>) {
    let mut child = bin()
        .args(["solve", "--board", board, "--data", s(data)])
        .args(extra)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stderr.take().unwrap())
        .lines()
        .map_while(|l| l.ok());
    (child, lines)
}

// ---- one writer per data directory ---------------------------------------------------------

/// Issue 7, "No lock": a second `solve` into a directory being solved exits 2 with one line
/// naming the process (it used to die with a raw OS error, or leave a wrong manifest), the
/// first finishes with the digests of a solve alone, and `--wait` waits for it.
#[test]
fn a_second_solve_is_refused_or_waits_and_the_first_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("alone");
    solve(&alone, "2x3", &[]);
    let reference = digests(&alone, "2x3");

    let data = dir.path().join("data");
    let (mut first, mut lines) = spawn_solve(&data, "2x3", &[]);
    // The first solve has the lock once it reports an age; stop it there, so that the second
    // surely meets it at work.
    // (The budget's line comes first: the solve prints it once it holds the lock.)
    let line = lines.next().expect("the budget's line");
    assert!(line.starts_with("memory budget"), "{line}");
    let line = lines.next().expect("a progress line");
    assert!(line.starts_with("forward: age"), "{line}");
    signal(&first, libc::SIGSTOP);
    let second = run(&["solve", "--board", "2x3", "--data", s(&data), "--quiet"]);
    let msg = format!("is being solved by process {}", first.id());
    assert!(refused(&second, &msg), "{}", stderr(&second));
    // `--wait` waits instead, and then finds the board solved.
    let waiter = bin()
        .args(["solve", "--board", "2x3", "--data", s(&data), "--wait"])
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    signal(&first, libc::SIGCONT);
    for _ in lines {}
    assert!(first.wait().unwrap().success());
    let waited = waiter.wait_with_output().unwrap();
    assert!(waited.status.success(), "{}", stderr(&waited));
    assert!(
        stderr(&waited).contains("is being solved by process"),
        "the waiter did not say whom it waits for: {}",
        stderr(&waited)
    );
    assert_eq!(digests(&data, "2x3"), reference);
    assert!(!data.join(".lock").exists(), "the lock file stayed");
    let v = run(&["verify", "--data", s(&data)]);
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
}

// ---- every damaged file detected ---------------------------------------------------------------

/// One kind of damage to one file of a solved 2x2.
struct Case {
    name: String,
    /// The path (relative to the data directory) `verify` must name.
    names: String,
    /// What the refusals of `sql` and `report` must name (the same path, but for a deleted
    /// manifest: then the solve is unfinished).
    readers: String,
    damage: Box<dyn Fn(&Path)>,
}

/// A damage done to a file.
type Damage = fn(&Path);

fn flip(p: &Path) {
    let mut b = fs::read(p).unwrap();
    let i = b.len() / 2;
    b[i] ^= 0x01;
    // Written in place (same size, same inode): only the digest can tell.
    fs::OpenOptions::new()
        .write(true)
        .open(p)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &b))
        .unwrap();
}

fn truncate(p: &Path) {
    let n = fs::metadata(p).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(p)
        .unwrap()
        .set_len(n / 2)
        .unwrap();
}

fn delete(p: &Path) {
    fs::remove_file(p).unwrap();
}

fn cases() -> Vec<Case> {
    let files = [
        (
            "states part",
            "states/board=2x2/variant=expectation/age=8/part-0.parquet",
        ),
        (
            "afterstates part",
            "afterstates/board=2x2/variant=expectation/age=8/part-0.parquet",
        ),
        (
            "ages part",
            "ages/board=2x2/variant=expectation/part-0.parquet",
        ),
        ("index", "index/board=2x2/variant=expectation/age=8.a2i"),
        ("manifest", "manifest/board=2x2/variant=expectation.json"),
    ];
    let mut out = Vec::new();
    for (kind, rel) in files {
        let ops: [(&str, Damage); 3] = [("flip", flip), ("truncate", truncate), ("delete", delete)];
        for (op, f) in ops {
            let rel_owned = rel.to_string();
            out.push(Case {
                name: format!("{op} {kind}"),
                // A deleted manifest leaves partitions without one: an unfinished solve.
                names: if kind == "manifest" && op == "delete" {
                    "board=2x2/variant=expectation".into()
                } else {
                    rel.into()
                },
                readers: if kind == "manifest" && op == "delete" {
                    "unfinished solves, not shown: 2x2 expectation".into()
                } else {
                    rel.into()
                },
                damage: Box::new(move |d: &Path| f(&d.join(&rel_owned))),
            });
        }
    }
    out.push(Case {
        name: "stray file in a partition".into(),
        names: "states/board=2x2/variant=expectation/age=8/part-1.parquet".into(),
        readers: "states/board=2x2/variant=expectation/age=8/part-1.parquet".into(),
        damage: Box::new(|d: &Path| {
            fs::write(
                d.join("states/board=2x2/variant=expectation/age=8/part-1.parquet"),
                b"PAR1",
            )
            .unwrap()
        }),
    });
    out.push(Case {
        name: "a digit changed in the manifest's counts".into(),
        names: "manifest/board=2x2/variant=expectation.json".into(),
        readers: "manifest/board=2x2/variant=expectation.json".into(),
        damage: Box::new(|d: &Path| {
            let p = d.join("manifest/board=2x2/variant=expectation.json");
            let t = fs::read_to_string(&p).unwrap();
            let at = t.find("\"n_states\": ").unwrap() + "\"n_states\": ".len();
            let mut b = t.into_bytes();
            b[at] = if b[at] == b'9' { b'8' } else { b[at] + 1 };
            fs::write(&p, b).unwrap();
        }),
    });
    out
}

/// Issue 7, "Digests are written, never checked": every kind of file of a solve flipped,
/// truncated or deleted (and a stray file, and a manifest made to lie) is reported by
/// `verify` (exit 2, naming it), refused by `sql`, `report` and `best` (exit 2) instead of
/// answered from, and solved again by `solve` without `--force`, to the digests of a clean
/// solve.
#[test]
fn every_damaged_file_is_reported_refused_and_solved_again() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean");
    solve(&clean, "2x2", &[]);
    let reference = digests(&clean, "2x2");
    let v = run(&["verify", "--data", s(&clean)]);
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
    assert!(stdout(&v).contains("no problem"), "{}", stdout(&v));

    let all = cases();
    let mut caught = [0usize; 5];
    let mut failures = Vec::new();
    for (i, c) in all.iter().enumerate() {
        let d = dir.path().join(format!("case{i}"));
        copy_dir(&clean, &d);
        (c.damage)(&d);
        let mut check = |slot: usize, what: &str, ok: bool, o: &Output| {
            if ok {
                caught[slot] += 1;
            } else {
                failures.push(format!(
                    "{}: {what}: exit {:?}\n{}{}",
                    c.name,
                    o.status.code(),
                    stdout(o),
                    stderr(o)
                ));
            }
        };
        let o = run(&["verify", "--data", s(&d)]);
        no_panic(&o);
        let ok = o.status.code() == Some(2) && stdout(&o).contains(&c.names);
        check(0, "verify", ok, &o);

        let o = run(&["sql", "--data", s(&d), "SELECT count(*) FROM states"]);
        let ok =
            o.status.code() == Some(2) && stdout(&o).is_empty() && stderr(&o).contains(&c.readers);
        no_panic(&o);
        check(1, "sql", ok, &o);

        let o = run(&["report", "--data", s(&d), "--out", s(&d.join("report"))]);
        let ok = o.status.code() == Some(2) && stderr(&o).contains(&c.readers);
        no_panic(&o);
        check(2, "report", ok, &o);

        let o = run(&["best", "--board", "2x2", "--data", s(&d), "2 4/. 2"]);
        no_panic(&o);
        // A missing manifest means "not solved" to `best`; everything else is damage.
        let ok = o.status.code() == Some(2)
            && (stderr(&o).contains("damaged") || stderr(&o).contains("no solved data"));
        check(3, "best", ok, &o);

        let o = run(&["solve", "--board", "2x2", "--data", s(&d), "--quiet"]);
        no_panic(&o);
        let again = o.status.success()
            && digests(&d, "2x2") == reference
            && run(&["verify", "--data", s(&d)]).status.success();
        check(4, "solve again", again, &o);
    }
    eprintln!(
        "corruption table: {} cases; caught by verify {}, sql {}, report {}, best {}; solved again {}",
        all.len(),
        caught[0],
        caught[1],
        caught[2],
        caught[3],
        caught[4]
    );
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
    assert_eq!(caught, [all.len(); 5]);
}

/// Readers hash only what changed since the last check, and a seal that is lost costs a
/// hashing, not a false alarm; `--quick` and a full `verify` agree on clean data.
#[test]
fn a_lost_seal_is_no_damage_and_a_touched_file_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("data");
    solve(&d, "2x2", &[]);
    fs::remove_dir_all(d.join(".seals")).unwrap();
    let o = run(&[
        "sql",
        "--data",
        s(&d),
        "--format",
        "csv",
        "SELECT count(*) AS n FROM states",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        d.join(".seals").exists(),
        "a clean check writes the seal again"
    );
    // Same bytes written again: the times change, the digest does not.
    let p = d.join("states/board=2x2/variant=expectation/age=8/part-0.parquet");
    fs::write(&p, fs::read(&p).unwrap()).unwrap();
    for args in [vec!["verify", "--quick"], vec!["verify"]] {
        let mut a = args.clone();
        a.extend(["--data", s(&d)]);
        let o = run(&a);
        assert!(o.status.success(), "{args:?}: {}{}", stdout(&o), stderr(&o));
    }
}

// ---- work files --------------------------------------------------------------------------------

/// True once the progress file of `pass` in the work folder vouches for a finished age.
fn progress_durable(data: &Path, pass: &str) -> bool {
    let Some(w) = fs::read_dir(data.join(".work/board=2x3"))
        .ok()
        .and_then(|mut r| r.next())
        .and_then(|e| e.ok())
    else {
        return false;
    };
    let Ok(b) = fs::read(w.path().join(format!("{pass}.json"))) else {
        return false;
    };
    let t = String::from_utf8_lossy(&b);
    t.find("\"done_age\": ")
        .and_then(|i| t[i + 12..].chars().next())
        .is_some_and(|c| c.is_ascii_digit())
}

/// Kills a `solve` of 2x3 in the `pass` ("forward" or "backward") once its progress there is
/// durable: the solve is stopped after a few ages for longer than its checkpoint interval,
/// then let run until its progress file names a finished age. Tries again if the solve
/// finished first.
fn kill_with_durable_progress(data: &Path, pass: &str) {
    for _ in 0..5 {
        let (mut child, lines) = spawn_solve(data, "2x3", &[]);
        let prefix = format!("{pass}: age");
        let mut lines = lines.filter(|l| l.starts_with(&prefix));
        for _ in 0..10 {
            lines.next().expect("progress");
        }
        signal(&child, libc::SIGSTOP);
        std::thread::sleep(std::time::Duration::from_millis(1300));
        signal(&child, libc::SIGCONT);
        let t = std::time::Instant::now();
        while !progress_durable(data, pass) && t.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        signal(&child, libc::SIGKILL);
        assert!(!child.wait().unwrap().success());
        if data.join(".work").exists() && progress_durable(data, pass) {
            return;
        }
        fs::remove_dir_all(data).unwrap();
    }
    panic!("could not kill a solve with durable {pass} progress");
}

fn work_dir(data: &Path) -> PathBuf {
    let board = data.join(".work/board=2x3");
    let mut classes: Vec<PathBuf> = fs::read_dir(&board)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(classes.len(), 1, "{classes:?}");
    classes.pop().unwrap()
}

/// The work file of the oldest age in `dir` (`age=N.…`): one the progress vouches for.
fn oldest(dir: &Path) -> PathBuf {
    let age = |p: &PathBuf| -> u32 {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        name.trim_start_matches("age=")
            .split('.')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .max_by_key(age)
        .expect("a work file")
}

/// Issue 7, "Work files": after a kill, a removed or damaged layer, record, values or progress
/// file is redone, never turned into wrong counts: the resumed solve ends with the digests of
/// an uninterrupted one, and says what it redoes.
#[test]
fn missing_or_damaged_work_files_are_redone() {
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("alone");
    solve(&alone, "2x3", &[]);
    let reference = digests(&alone, "2x3");

    let cases: [(&str, &str, Damage); 7] = [
        ("forward", "delete layers/age=4.ids", |w| {
            delete(&w.join("layers/age=4.ids"))
        }),
        ("forward", "flip a layer", |w| {
            flip(&w.join("layers/age=10.ids"))
        }),
        ("forward", "flip forward.json", |w| {
            flip(&w.join("forward.json"))
        }),
        ("backward", "delete a record", |w| {
            delete(&oldest(&w.join("records")))
        }),
        ("backward", "flip a record", |w| {
            flip(&oldest(&w.join("records")))
        }),
        ("backward", "delete the values", |w| {
            fs::remove_dir_all(w.join("values")).unwrap()
        }),
        ("backward", "flip backward.json", |w| {
            flip(&w.join("backward.json"))
        }),
    ];
    // The cases at once, each in a folder of its own: each waits out a checkpoint interval.
    let redone = std::thread::scope(|scope| {
        let handles: Vec<_> = cases
            .iter()
            .enumerate()
            .map(|(i, (pass, name, damage))| {
                let (d, alone, reference) =
                    (dir.path().join(format!("case{i}")), &alone, &reference);
                scope.spawn(move || {
                    kill_with_durable_progress(&d, pass);
                    damage(&work_dir(&d));
                    let o = run(&["solve", "--board", "2x3", "--data", s(&d), "--quiet"]);
                    no_panic(&o);
                    assert!(o.status.success(), "{name}: {}", stderr(&o));
                    assert!(
                        stderr(&o).contains("work file damaged"),
                        "{name}: not told: {}",
                        stderr(&o)
                    );
                    assert_eq!(&digests(&d, "2x3"), reference, "{name}: another solve");
                    assert_eq!(
                        manifest(&d, "2x3")["n_states"],
                        manifest(alone, "2x3")["n_states"]
                    );
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).count()
    });
    eprintln!(
        "work files: {} damages, {redone} redone to the same digests",
        cases.len()
    );
}

// ---- no panics -----------------------------------------------------------------------------------

/// Issue 7, "Panics": a board text of 65,536+ characters with `--format table`, and output
/// that cannot be written (stderr on a full device, stdout closed early).
#[test]
fn long_board_text_and_unwritable_output_do_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("data");
    solve(&d, "2x2", &[]);
    let long = "2 ".repeat(40_000);
    let o = run(&[
        "best",
        "--board",
        "2x2",
        "--data",
        s(&d),
        "--format",
        "table",
        &long,
    ]);
    assert!(refused(&o, "more than the"), "{}", stderr(&o));
    assert!(stderr(&o).len() < 400, "the error repeats the text");

    // stderr on /dev/full: the error cannot be told, but the status still says it.
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = bin()
        .args(["best", "--board", "2x2", "--data", s(&d), "9 9/9 9"])
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = bin()
        .args(["best", "--board", "2x2", "--data", s(&d), "2 2/. ."])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "a full disk on stdout is the machine failing"
    );
    no_panic(&o);

    // stdout closed after the first line: the command ends quietly.
    let mut child = bin()
        .args([
            "sql",
            "--data",
            s(&d),
            "--format",
            "csv",
            "SELECT * FROM range(1000000)",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    drop(out);
    let o = child.wait_with_output().unwrap();
    no_panic(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A small deterministic generator (xorshift), so the fuzz cases are the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

fn random_board_text(r: &mut Rng) -> String {
    let atoms = [
        "2",
        "4",
        "8",
        "0",
        ".",
        "/",
        " ",
        "  ",
        "\t",
        "\n",
        "1024",
        "65536",
        "3",
        "x",
        "-2",
        "é",
        "２",
        "\u{7f}",
        "9999999999999999999999",
        "//",
        "2 2",
        "./.",
        "+4",
        "0x2",
    ];
    let n = match r.below(10) {
        0 => 2000 + r.below(70_000),
        _ => r.below(12),
    };
    let mut text: String = (0..n).map(|_| r.pick(&atoms)).collect();
    // An argument holds at most 128 KiB (Linux's MAX_ARG_STRLEN).
    while text.len() > 100_000 {
        text.pop();
    }
    text
}

/// Issue 7, item 8: random board texts and flags fed to `best`, `solve` and `guaranteed`
/// (a seeded loop): never a panic, always exit 0 or 2.
#[test]
fn random_inputs_never_panic_and_exit_0_or_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("data");
    solve(&d, "2x2", &[]);
    let scratch = dir.path().join("scratch");
    let boards = [
        "2x2", "2x2", "1x2", "2x1", "1x1", "4x5", "0x3", "2x", "x", "", "2x2x2", "3X3", "١x٢",
    ];
    let variants = [
        "expectation",
        "optimistic",
        "pessimistic",
        "goal-32",
        "goal-3",
        "guaranteed-8",
        "goal-32-p4=0.2",
        "lucky",
        "",
        "goal-",
        "goal-99999999999",
    ];
    let p4s = ["0", "1", "0.5", "-1", "2", "nan", "inf", "1e-300", "x"];
    let formats = ["table", "csv", "json", "xml"];
    let mut r = Rng(0x2048_7007_dead_beef);
    let (mut n, mut ok0, mut ok2) = (0, 0, 0);
    for i in 0..150 {
        let mut args: Vec<String> = Vec::new();
        match i % 3 {
            0 => {
                args.extend(["best".into(), "--board".into(), r.pick(&boards).into()]);
                args.extend(["--data".into(), s(&d).into()]);
                if r.below(2) == 0 {
                    args.extend(["--variant".into(), r.pick(&variants).into()]);
                }
                args.extend(["--format".into(), r.pick(&formats).into()]);
                for _ in 0..1 + r.below(3) {
                    args.push(random_board_text(&mut r));
                }
            }
            1 => {
                // Only boards that solve in a moment: 2x2 and smaller, or bad ones.
                let board = r.pick(&["2x2", "1x2", "2x1", "1x1", "0x0", "5x5", "9", ""]);
                args.extend(["solve".into(), "--board".into(), board.into()]);
                args.extend(["--data".into(), s(&scratch).into(), "--quiet".into()]);
                if r.below(2) == 0 {
                    args.extend(["--variant".into(), r.pick(&variants).into()]);
                }
                if r.below(3) == 0 {
                    args.extend(["--p4".into(), r.pick(&p4s).into()]);
                }
                if r.below(4) == 0 {
                    args.extend([
                        "--symmetry".into(),
                        r.pick(&["full", "none", "rot", ""]).into(),
                    ]);
                }
            }
            _ => {
                let board = r.pick(&["2x2", "1x2", "2x1", "1x3", "0x1", "5x5", "q"]);
                args.extend(["guaranteed".into(), "--board".into(), board.into()]);
                if r.below(3) == 0 {
                    args.extend(["--p4".into(), r.pick(&p4s).into()]);
                }
                args.extend(["--format".into(), r.pick(&formats).into()]);
            }
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run(&refs);
        no_panic(&o);
        let short: Vec<String> = args.iter().map(|a| a.chars().take(40).collect()).collect();
        match o.status.code() {
            Some(0) => ok0 += 1,
            Some(2) => {
                ok2 += 1;
                assert!(
                    !stderr(&o).trim().is_empty(),
                    "{short:?}: exit 2 without a word"
                );
            }
            c => panic!("{short:?}: exit {c:?}: {}", stderr(&o)),
        }
        n += 1;
    }
    eprintln!("fuzz: {n} runs, {ok0} exit 0, {ok2} exit 2, no panic");
    assert!(
        ok0 > 0 && ok2 > 0,
        "the generator tried only one kind ({ok0}/{ok2})"
    );
}

// ---- mixed data, SQL types ---------------------------------------------------------------------

/// Issue 7, "Mixed data": `solve --symmetry none` into a directory solved under the full group
/// is refused (exit 2) without `--force`, and leaves the solve as it was.
#[test]
fn a_second_symmetry_group_is_refused_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("data");
    solve(&d, "2x2", &[]);
    let before = digests(&d, "2x2");
    let o = run(&[
        "solve",
        "--board",
        "2x2",
        "--data",
        s(&d),
        "--variant",
        "optimistic",
        "--symmetry",
        "none",
        "--quiet",
    ]);
    assert!(refused(&o, "solved under symmetry full"), "{}", stderr(&o));
    assert_eq!(digests(&d, "2x2"), before);
    let o = run(&["verify", "--data", s(&d)]);
    assert!(o.status.success(), "{}", stdout(&o));
}

/// Issue 7: `sql "select now()"` (a time zone value) failed to format; every DuckDB type
/// prints, in every format.
#[test]
fn sql_prints_every_duckdb_type() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("data");
    solve(&d, "2x2", &[]);
    let q = "SELECT now() AS now, TIMESTAMPTZ '2024-05-06 07:08:09+00' AS tz, \
             TIMETZ '12:00:00+01' AS ttz, \
             170141183460469231731687303715884105727::HUGEINT AS huge, \
             340282366920938463463374607431768211455::UHUGEINT AS uhuge, \
             '101'::BIT AS bits, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID AS id, \
             INTERVAL 3 DAY AS iv, 1.25::DECIMAL(10, 2) AS dec, 'ab'::BLOB AS blob, \
             [1, 2] AS list, {'k': 1} AS st, MAP {'a': 1} AS m, true AS b, \
             union_value(n := 1) AS u";
    for format in ["table", "csv", "json"] {
        let o = run(&["sql", "--data", s(&d), "--format", format, q]);
        assert!(o.status.success(), "{format}: {}", stderr(&o));
        let out = stdout(&o);
        for want in [
            "2024-05-06",
            "12:00:00+01",
            "170141183460469231731687303715884105727",
            "340282366920938463463374607431768211455",
            "101",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        ] {
            assert!(out.contains(want), "{format}: {want} missing from {out}");
        }
    }
}

/// Issue 7, the smaller holes: `compare` of a variant with itself, an OS error told twice, a
/// goal variant's board holding the goal tile, and `sql` over a directory with nothing solved.
#[test]
fn repeated_variants_goal_boards_os_errors_and_empty_directories() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("data");
    solve(&d, "2x2", &["--variant", "expectation,goal-8"]);

    let out = dir.path().join("cmp");
    let o = run(&[
        "compare",
        "--board",
        "2x2",
        "--variants",
        "expectation,expectation",
        "--data",
        s(&d),
        "--out",
        s(&out),
    ]);
    assert!(refused(&o, "listed twice"), "{}", stderr(&o));

    let o = run(&[
        "best",
        "--board",
        "2x2",
        "--data",
        s(&d),
        "--input",
        "/nonexistent/boards",
    ]);
    assert!(refused(&o, "/nonexistent/boards"), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(
        e.matches("No such file or directory").count(),
        1,
        "the OS text is told once: {e}"
    );

    // A board holding the goal tile: value 1, no move (it is terminal for the goal).
    let o = run(&[
        "best",
        "--board",
        "2x2",
        "--data",
        s(&d),
        "--variant",
        "goal-8",
        "--format",
        "json",
        "8 2/. .",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let row = &rows[0];
    assert_eq!(row["value"].as_f64(), Some(1.0), "{row}");
    assert!(row["best"].is_null(), "{row}");
    // Every stored probability lies in [0, 1].
    let o = run(&[
        "sql",
        "--data",
        s(&d),
        "--format",
        "csv",
        "SELECT count(*) AS n, min(value) >= 0 AND max(value) <= 1 AS ok FROM states \
         WHERE variant = 'goal-8'",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let last = stdout(&o).lines().last().unwrap().to_string();
    assert!(last.ends_with(",true"), "{last}");

    // A directory with nothing solved is an error, not zero rows.
    let empty = dir.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    let o = run(&["sql", "--data", s(&empty), "SELECT count(*) FROM states"]);
    assert!(refused(&o, "nothing is solved"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
}

//! A solve under MPI (feature `mpi`): the start-up of a process of the job ([`run_mpi`]), and
//! the transport, `MPI_Alltoallv`, `MPI_Allgatherv` and `MPI_Allreduce` over the world
//! communicator, through the `mpi` crate. Only the thread that initialised MPI calls it (the
//! passes call the exchange from their own thread; rayon's workers never do), so MPI runs at
//! the `funneled` level.
//!
//! Where a host holds several of the job's processes, a process waits for a collective
//! without holding a core ([`wait`]): MPI's own blocking wait polls in a loop for as long as
//! the others take to get there, and on a shared host it takes the core another process of
//! the job works on. With one process a host (a cluster's usual launch) the collectives are
//! MPI's blocking ones, as its own progress is the fastest there.

use std::io::Write;
use std::time::{Duration, Instant};

use mpi::datatype::{Partition, PartitionMut};
use mpi::environment::Universe;
use mpi::request::{Request, Scope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use mpi::Count;

use super::{Exchange, Transport};
use crate::error::{one_line, ErrorKind};
use crate::rules::Shape;
use crate::solver::{Result, SolveError};
use crate::store::parts::{Parts, Scheme};

/// MPI, initialised for the life of this value.
pub struct Mpi {
    _universe: Universe,
    world: SimpleCommunicator,
    /// The thread that initialised MPI: the only one that may call it (`funneled`).
    owner: std::thread::ThreadId,
    /// Whether collectives wait politely ([`wait`]): the same in every process of the job
    /// (MPI matches a blocking collective only with blocking ones), set by [`Mpi::share_hosts`].
    polite: bool,
}

// SAFETY: MPI is initialised at the `funneled` level: only the thread that initialised it may
// call it. Every method that calls MPI first checks that it runs on that thread
// ([`Mpi::on_owner`]) and refuses otherwise, so sharing the value between threads (the passes'
// workers read the exchange's partition through it) never makes two threads call MPI.
unsafe impl Send for Mpi {}
unsafe impl Sync for Mpi {}

/// Whether this process was started by an MPI launcher (`mpirun`, `mpiexec`, `srun`): the
/// variables Open MPI, MPICH/Hydra, PMIx and Slurm's PMI set.
pub fn launched() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_RANK",
        "MPI_LOCALNRANKS",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some())
}

/// One process of `mpirun -np N age2048 solve`: MPI initialised, then `solve` run as one of
/// the job's processes (boards of `shape` split by `scheme`, one part a process), told how
/// many processes of the job share this host's memory; a job of one process solves as a
/// single process. Each process of a job says on standard error, in one line, which host it
/// runs on and how many of the job's processes that host holds. An error in any process is printed by it in one line and ends the whole
/// job with its status (`MPI_Abort`), so that no process waits for one that stopped; an error
/// that `quiet` accepts (a closed standard output) just returns.
pub fn run_mpi<E>(
    shape: Shape,
    scheme: Scheme,
    solve: impl FnOnce(&Exchange, u32) -> std::result::Result<(), E>,
    quiet: impl Fn(&E) -> bool,
) -> std::result::Result<(), E>
where
    E: From<SolveError> + ErrorKind + std::error::Error,
{
    let mut mpi = Mpi::init()?;
    // A panic in any thread ends the process at once (after its message), and the launcher
    // then ends the job: the others must not wait in a collective for it.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        std::process::abort();
    }));
    if mpi.ranks() == 1 {
        return solve(&Exchange::single(shape), 1);
    }
    let sharers = mpi.on_this_host()?;
    mpi.share_hosts(sharers)?;
    let host = ::mpi::environment::processor_name().unwrap_or_else(|_| "?".into());
    say(&format!(
        "process {} of {} on host {host} ({sharers} of the solve's processes on it)",
        mpi.rank(),
        mpi.ranks()
    ));
    let parts = Parts {
        count: mpi.ranks(),
        scheme,
    };
    let result = Exchange::new(&mpi, parts, shape)
        .map_err(E::from)
        .and_then(|ex| solve(&ex, sharers));
    if let Err(e) = &result {
        if !quiet(e) {
            say(&format!(
                "age2048: error: process {} of {}: {}",
                mpi.rank(),
                mpi.ranks(),
                one_line(e)
            ));
            mpi.abort(i32::from(e.kind().exit_code()));
        }
    }
    result
}

/// Writes one line to stderr in a single `write`: the launcher forwards every process's stderr
/// into one stream, and a line written in pieces (as `writeln!` on the unbuffered stderr does)
/// comes out interleaved with another process's line.
fn say(line: &str) {
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

impl Mpi {
    /// Initialises MPI (once a process).
    pub fn init() -> Result<Mpi> {
        let (universe, _level) = mpi::initialize_with_threading(mpi::Threading::Funneled)
            .ok_or_else(|| {
                SolveError::Internal("MPI was initialised already in this process".into())
            })?;
        let world = universe.world();
        Ok(Mpi {
            _universe: universe,
            world,
            owner: std::thread::current().id(),
            polite: false,
        })
    }

    /// Collectives wait politely from now on if any host holds more than one of the job's
    /// processes (`sharers` on this one), as every process agrees. Collective.
    pub fn share_hosts(&mut self, sharers: u32) -> Result<()> {
        self.polite = self.all_max(u64::from(sharers))? > 1;
        Ok(())
    }

    /// How many processes of the job run on this host (those that share its memory:
    /// `MPI_Comm_split_type` by shared memory, which the launcher answers by the node it
    /// started each process on; processes on other hosts are not counted). Collective.
    pub fn on_this_host(&self) -> Result<u32> {
        self.on_owner()?;
        Ok(self.world.split_shared(0).size() as u32)
    }

    /// Refuses a call from another thread than the one that initialised MPI.
    fn on_owner(&self) -> Result<()> {
        if std::thread::current().id() != self.owner {
            return Err(SolveError::Internal(
                "MPI called from another thread than the one that initialised it".into(),
            ));
        }
        Ok(())
    }
}

fn count(n: usize) -> Result<Count> {
    Count::try_from(n).map_err(|_| {
        SolveError::Internal(format!("{n} items in one MPI message (counts are 32-bit)"))
    })
}

fn displacements(counts: &[Count]) -> Vec<Count> {
    counts
        .iter()
        .scan(0, |acc, &x| {
            let at = *acc;
            *acc += x;
            Some(at)
        })
        .collect()
}

/// Calls a collective of the world communicator: its non-blocking form awaited by [`wait`]
/// where the processes agreed to wait politely, its blocking form otherwise (the `mpi`
/// crate's two methods take the same arguments, the first after a request scope).
macro_rules! collective {
    ($mpi:ident, $blocking:ident, $immediate:ident, $($arg:expr),+) => {
        if $mpi.polite {
            mpi::request::scope(|sc| wait($mpi.world.$immediate(sc, $($arg),+)))
        } else {
            $mpi.world.$blocking($($arg),+)
        }
    };
}

impl Transport for Mpi {
    fn rank(&self) -> u32 {
        self.world.rank() as u32
    }

    fn ranks(&self) -> u32 {
        self.world.size() as u32
    }

    fn all_to_all(&self, send: &[&[u64]]) -> Result<Vec<Vec<u64>>> {
        self.on_owner()?;
        let n = self.world.size() as usize;
        if send.len() != n {
            return Err(SolveError::Internal(format!(
                "{} buckets for {n} processes",
                send.len()
            )));
        }
        let send_counts: Vec<Count> = send.iter().map(|b| count(b.len())).collect::<Result<_>>()?;
        let total: usize = send.iter().map(|b| b.len()).sum();
        count(total)?;
        let mut flat = Vec::with_capacity(total);
        for b in send {
            flat.extend_from_slice(b);
        }
        let mut recv_counts: Vec<Count> = vec![0; n];
        collective!(
            self,
            all_to_all_into,
            immediate_all_to_all_into,
            &send_counts[..],
            &mut recv_counts[..]
        );
        let recv_total: usize = recv_counts.iter().map(|&c| c as usize).sum();
        count(recv_total)?;
        let mut recv = receive_buffer(recv_total);
        {
            let send_displs = displacements(&send_counts);
            let recv_displs = displacements(&recv_counts);
            let sp = Partition::new(&flat[..], &send_counts[..], &send_displs[..]);
            let mut rp = PartitionMut::new(&mut recv[..], &recv_counts[..], &recv_displs[..]);
            collective!(
                self,
                all_to_all_varcount_into,
                immediate_all_to_all_varcount_into,
                &sp,
                &mut rp
            );
        }
        Ok(split_by(&recv, &recv_counts))
    }

    fn all_gather(&self, bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.on_owner()?;
        let n = self.world.size() as usize;
        let mine = count(bytes.len())?;
        let mut counts: Vec<Count> = vec![0; n];
        collective!(
            self,
            all_gather_into,
            immediate_all_gather_into,
            &mine,
            &mut counts[..]
        );
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        count(total)?;
        let mut recv = receive_buffer(total);
        {
            let displs = displacements(&counts);
            let mut rp = PartitionMut::new(&mut recv[..], &counts[..], &displs[..]);
            collective!(
                self,
                all_gather_varcount_into,
                immediate_all_gather_varcount_into,
                bytes,
                &mut rp
            );
        }
        Ok(split_by(&recv, &counts))
    }

    fn all_max(&self, x: u64) -> Result<u64> {
        self.on_owner()?;
        let mut out = 0u64;
        let max = mpi::collective::SystemOperation::max();
        collective!(
            self,
            all_reduce_into,
            immediate_all_reduce_into,
            &x,
            &mut out,
            max
        );
        Ok(out)
    }

    fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
}

/// How long [`wait`] tests a request in a tight loop before it sleeps between tests: a
/// collective whose processes all arrive within it ends as soon as with MPI's blocking wait.
const SPIN: Duration = Duration::from_millis(2);

/// The first and the longest sleep between two tests of a request, doubling from the first:
/// a process that waits seconds for the others wakes about a thousand times a second (a few
/// microseconds of CPU each), and is at most this late on top of MPI's own time.
const FIRST_PAUSE: Duration = Duration::from_micros(50);
const LONGEST_PAUSE: Duration = Duration::from_millis(1);

/// Waits for a non-blocking collective to end: tests it (which also moves its messages on) in
/// a tight loop for [`SPIN`], then sleeps between tests, from [`FIRST_PAUSE`] doubling up to
/// [`LONGEST_PAUSE`]. MPI's blocking wait spins (or yields, with `mpi_yield_when_idle`) for
/// the whole wait: a process waiting while another on its host values an age takes a core
/// from it (or a system call a turn, yielding).
fn wait<'a, D: ?Sized, S: Scope<'a>>(mut request: Request<'a, D, S>) {
    let start = Instant::now();
    let mut pause = FIRST_PAUSE;
    loop {
        match request.test() {
            Ok(_) => return,
            Err(r) => request = r,
        }
        if start.elapsed() < SPIN {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(pause);
            pause = (pause * 2).min(LONGEST_PAUSE);
        }
    }
}

/// A receive buffer of `n` zeros that is never empty in memory: libnbc (Open MPI's
/// non-blocking collectives) takes a send and a receive buffer at the same address as
/// `MPI_IN_PLACE`, and two empty `Vec`s share one dangling address, so a process that sends
/// and receives nothing would run the in-place schedule while the others do not, and the job
/// would hang. A real allocation never has the address of another live buffer.
fn receive_buffer<T: Clone + Default>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n.max(1));
    v.resize(n, T::default());
    v
}

/// A collective's receive buffer cut into each process's bytes, in rank order.
fn split_by<T: Clone>(recv: &[T], counts: &[Count]) -> Vec<Vec<T>> {
    let mut at = 0;
    counts
        .iter()
        .map(|&c| {
            let part = recv[at..at + c as usize].to_vec();
            at += c as usize;
            part
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty receive buffer is a real allocation: never at the dangling address that an
    /// empty send buffer has, which libnbc would take for `MPI_IN_PLACE` (regression: a 2x2
    /// solve over two processes hung at its first age when every buffer was a `Vec`).
    #[test]
    fn an_empty_receive_buffer_is_never_at_an_empty_send_buffers_address() {
        let empty_ids: Vec<u64> = Vec::new();
        let empty_bytes: Vec<u8> = Vec::new();
        let ids: Vec<u64> = receive_buffer(0);
        let bytes: Vec<u8> = receive_buffer(0);
        assert_ne!(ids.as_ptr(), empty_ids.as_ptr());
        assert_ne!(bytes.as_ptr(), empty_bytes.as_ptr());
        assert!(ids.is_empty() && bytes.is_empty());
        assert_eq!(receive_buffer::<u64>(3), vec![0, 0, 0]);
    }
}

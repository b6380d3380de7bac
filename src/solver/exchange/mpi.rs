//! A solve under MPI (feature `mpi`): the start-up of a process of the job ([`run_mpi`]), and
//! the transport, `MPI_Alltoallv`, `MPI_Allgatherv` and `MPI_Allreduce` over the world
//! communicator, through the `mpi` crate. Only the thread that initialised MPI calls it (the
//! passes call the exchange from their own thread; rayon's workers never do), so MPI runs at
//! the `funneled` level.

use std::io::Write;

use mpi::datatype::{Partition, PartitionMut};
use mpi::environment::Universe;
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
    let mpi = Mpi::init()?;
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
        })
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
        self.world
            .all_to_all_into(&send_counts[..], &mut recv_counts[..]);
        let recv_total: usize = recv_counts.iter().map(|&c| c as usize).sum();
        count(recv_total)?;
        let mut recv = vec![0u64; recv_total];
        {
            let send_displs = displacements(&send_counts);
            let recv_displs = displacements(&recv_counts);
            let sp = Partition::new(&flat[..], &send_counts[..], &send_displs[..]);
            let mut rp = PartitionMut::new(&mut recv[..], &recv_counts[..], &recv_displs[..]);
            self.world.all_to_all_varcount_into(&sp, &mut rp);
        }
        Ok(split_by(&recv, &recv_counts))
    }

    fn all_gather(&self, bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.on_owner()?;
        let n = self.world.size() as usize;
        let mine = count(bytes.len())?;
        let mut counts: Vec<Count> = vec![0; n];
        self.world.all_gather_into(&mine, &mut counts[..]);
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        count(total)?;
        let mut recv = vec![0u8; total];
        {
            let displs = displacements(&counts);
            let mut rp = PartitionMut::new(&mut recv[..], &counts[..], &displs[..]);
            self.world.all_gather_varcount_into(bytes, &mut rp);
        }
        Ok(split_by(&recv, &counts))
    }

    fn all_max(&self, x: u64) -> Result<u64> {
        self.on_owner()?;
        let mut out = 0u64;
        self.world
            .all_reduce_into(&x, &mut out, mpi::collective::SystemOperation::max());
        Ok(out)
    }

    fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
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

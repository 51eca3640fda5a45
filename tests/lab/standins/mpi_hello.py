#!/usr/bin/python3 -S
"""A real Open MPI program (libmpi through ctypes): MPI_Init, rank and size, a barrier, then one
line per rank, "mpi_hello HOST rank R of S env OMPI_COMM_WORLD_RANK=V", where V is what the
environment held before MPI_Init ("-" when unset). Shows how a launcher hands out ranks:
mpirun sets OMPI_COMM_WORLD_*, `srun --mpi=pmix` gives them through PMIx only.
"""

import ctypes
import os
import socket
import sys


def main():
    before = os.environ.get("OMPI_COMM_WORLD_RANK", "-")
    mpi = ctypes.CDLL("libmpi.so.40", mode=ctypes.RTLD_GLOBAL)
    if mpi.MPI_Init(None, None) != 0:
        sys.stderr.write("mpi_hello: MPI_Init failed\n")
        return 1
    # MPI_COMM_WORLD is &ompi_mpi_comm_world in Open MPI's ABI.
    world = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.in_dll(mpi, "ompi_mpi_comm_world")))
    rank, size = ctypes.c_int(), ctypes.c_int()
    mpi.MPI_Comm_rank(world, ctypes.byref(rank))
    mpi.MPI_Comm_size(world, ctypes.byref(size))
    mpi.MPI_Barrier(world)
    sys.stdout.write("mpi_hello %s rank %d of %d env OMPI_COMM_WORLD_RANK=%s\n"
                     % (socket.gethostname(), rank.value, size.value, before))
    sys.stdout.flush()
    mpi.MPI_Finalize()
    return 0


if __name__ == "__main__":
    sys.exit(main())

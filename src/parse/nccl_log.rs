//! NCCL debug log lines. STUB.

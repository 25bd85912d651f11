#pragma once
// Batch systems warn a job with SIGTERM (or a user-chosen SIGUSR1) before killing it.
// The handlers only record the signal; the step loop looks at it once per step (a
// collective check), writes a checkpoint and ends the run cleanly.
namespace tessera::driver {

/// Install the SIGTERM and SIGUSR1 handlers (idempotent).
void install_signal_handlers();
/// The last signal received (SIGTERM or SIGUSR1), or 0.
int pending_signal();

}  // namespace tessera::driver

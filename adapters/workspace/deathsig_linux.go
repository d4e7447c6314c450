package workspace

import "syscall"

// setDeathSignal has the kernel send SIGTERM to the command's first
// process when the server's thread that started it ends: a sandbox's
// launcher then ends the command, and bubblewrap its namespace.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }

// Package sandbox runs a command-line tool on untrusted input in a process
// of its own, bounded in memory (address space), CPU time, wall time,
// files it may write and open, and output: the service's own binary is
// started again with an environment variable naming the limits, sets them
// on itself (setrlimit), then becomes the tool (execve). A tool that
// crashes, loops or swells is killed with its process group, and its
// caller gets an error; the service goes on.
//
// Every binary that runs a Sandbox (the service's main, and the TestMain of
// test packages that reach one) calls Main first.
package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// envLimits carries the limits to the re-executed binary: "as:cpu".
const envLimits = "DOCLIB_SANDBOX_LIMITS"

// prctl(2) and setrlimit(2) constants the syscall package does not name.
const (
	prSetNoNewPrivs = 38 // PR_SET_NO_NEW_PRIVS
	rlimitNproc     = 6  // RLIMIT_NPROC
)

// toolEnv names the variables of the service's environment a tool is
// given: where to find programs, the locale, the temporary directory and
// fontconfig's. No other reaches it (the service's own, such as its
// storage and database credentials, would be read by a compromised tool).
var toolEnv = []string{"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "HOME",
	"FONTCONFIG_FILE", "FONTCONFIG_PATH", "XDG_CACHE_HOME"}

// environ is the tool's environment: the toolEnv variables set here and
// the limits.
func environ(limits string) []string {
	env := []string{envLimits + "=" + limits}
	for _, k := range toolEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Limits bound one run.
type Limits struct {
	Memory  int64         // bytes of address space
	CPU     time.Duration // CPU time (rounded up to a second)
	Timeout time.Duration // wall time
	Output  int64         // bytes of standard output kept; more is an error
}

// Main turns this process into the sandboxed tool when it was started as
// one, and returns at once otherwise. It never returns in a sandbox: the
// tool replaces the process, or it exits with status 127.
func Main() {
	spec, ok := os.LookupEnv(envLimits)
	if !ok {
		return
	}
	if err := become(spec, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
	}
	os.Exit(127)
}

func become(spec string, args []string) error {
	as, cpu, ok := strings.Cut(spec, ":")
	mem, err1 := strconv.ParseUint(as, 10, 64)
	secs, err2 := strconv.ParseUint(cpu, 10, 64)
	if !ok || err1 != nil || err2 != nil || len(args) == 0 {
		return fmt.Errorf("bad limits %q or no tool", spec)
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return err
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envLimits+"=") {
			env = append(env, kv)
		}
	}
	pathp, err1 := syscall.BytePtrFromString(path)
	argvp, err2 := syscall.SlicePtrFromStrings(args)
	envp, err3 := syscall.SlicePtrFromStrings(env)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	// No set-user-ID program the tool might run gains privileges.
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0); e != 0 {
		return fmt.Errorf("prctl no_new_privs: %w", e)
	}
	for _, l := range []struct {
		res int
		max uint64
	}{
		{syscall.RLIMIT_CPU, secs}, {syscall.RLIMIT_CORE, 0},
		{syscall.RLIMIT_FSIZE, 0}, // output goes to a pipe; no file is written
		{syscall.RLIMIT_NOFILE, 64},
	} {
		if err := syscall.Setrlimit(l.res, &syscall.Rlimit{Cur: l.max, Max: l.max}); err != nil {
			return fmt.Errorf("setrlimit %d: %w", l.res, err)
		}
	}
	// The address space last, and then nothing that may allocate until the
	// tool replaces this process: the Go runtime already maps more than a
	// tool's bound may allow, so a growth of its heap would fail.
	rlim := syscall.Rlimit{Cur: mem, Max: mem}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, 0, syscall.RLIMIT_AS, uintptr(unsafe.Pointer(&rlim)), 0, 0, 0); e != 0 {
		return fmt.Errorf("setrlimit address space: %w", e)
	}
	// No process or thread may be started by the tool (the limit counts
	// every process of the user, so it is 1 and any fork fails). Set here,
	// last, as the Go runtime may start a thread of its own before.
	// Ignored for root; a failure to set it is not fatal (it is a second
	// line behind the others).
	nproc := syscall.Rlimit{Cur: 1, Max: 1}
	_, _, _ = syscall.RawSyscall6(syscall.SYS_PRLIMIT64, 0, rlimitNproc, uintptr(unsafe.Pointer(&nproc)), 0, 0, 0)
	_, _, e := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(pathp)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])))
	return fmt.Errorf("exec %s: %w", path, e)
}

// Failure is a run that did not succeed: the tool exited with an error,
// was killed by a limit, or wrote too much. Stderr is the end of what it
// said.
type Failure struct {
	Reason string
	Stderr string
}

func (f *Failure) Error() string { return f.Reason }

// Run runs tool with args under lim and returns its standard output. ctx
// ending kills it too.
func Run(ctx context.Context, lim Limits, tool string, args ...string) ([]byte, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, append([]string{tool}, args...)...)
	cpu := int64((lim.CPU + time.Second - 1) / time.Second)
	cmd.Env = environ(fmt.Sprintf("%d:%d", lim.Memory, max(cpu, 1)))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out := &capped{max: lim.Output, kill: cancel}
	stderr := &capped{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, stderr
	err = cmd.Run()
	switch {
	case out.over:
		return nil, &Failure{Reason: fmt.Sprintf("its output is over %d bytes", lim.Output)}
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, &Failure{Reason: fmt.Sprintf("reading it took over %s", lim.Timeout), Stderr: stderr.buf.String()}
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, &Failure{Reason: exitReason(err), Stderr: stderr.buf.String()}
	}
	return out.buf.Bytes(), nil
}

func exitReason(err error) string {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return err.Error()
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if ws.Signal() == syscall.SIGXCPU || ws.Signal() == syscall.SIGKILL {
			return "reading it used too much CPU time"
		}
		return "the reader crashed (" + ws.Signal().String() + ")"
	}
	if exit.ExitCode() == 127 {
		return "the reader could not start"
	}
	return fmt.Sprintf("the reader failed (exit status %d)", exit.ExitCode())
}

// capped keeps up to max bytes; past that it notes it and stops the run
// (standard output), or keeps the last max bytes (standard error, kill nil).
// (Not an embedded bytes.Buffer: io.Copy would use its ReadFrom, unbounded.)
type capped struct {
	buf  bytes.Buffer
	max  int64
	over bool
	kill func()
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	if room := c.max - int64(c.buf.Len()); int64(len(p)) > room {
		if c.kill != nil {
			c.over = true
			c.kill()
			return 0, errors.New("output over the limit")
		}
		// Standard error: its end says most (the last error).
		c.buf.Write(p)
		c.buf.Next(c.buf.Len() - int(c.max))
		return n, nil
	}
	c.buf.Write(p)
	return n, nil
}

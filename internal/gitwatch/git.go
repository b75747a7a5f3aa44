package gitwatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"knit.dev/knit/internal/procexec"
)

// ErrBranchNotFound means the repository has no branch of the configured name.
var ErrBranchNotFound = errors.New("branch not found")

// GitError is a git command that failed: which one, its exit code and its
// stderr, with every secret already redacted.
type GitError struct {
	Command  string // the git subcommand, such as "fetch"
	ExitCode int    // -1 when git did not run or was killed
	Stderr   string
}

func (e *GitError) Error() string {
	msg := fmt.Sprintf("git %s failed (exit code %d)", e.Command, e.ExitCode)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

// command is one git invocation, built apart from running it so that tests
// can assert its argv and environment.
type command struct {
	args    []string // after "git", starting with the subcommand
	env     []string // added to the base environment; later entries win
	stdin   []byte
	secrets []string // redacted from the error
}

// inheritedGitVars are variables a parent git (a hook, say) may have set
// that would point git at another repository, index or configuration.
var inheritedGitVars = []string{
	"GIT_DIR=", "GIT_WORK_TREE=", "GIT_INDEX_FILE=", "GIT_OBJECT_DIRECTORY=",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES=", "GIT_COMMON_DIR=", "GIT_NAMESPACE=",
	"GIT_PREFIX=", "GIT_QUARANTINE_PATH=", "GIT_CONFIG=", "GIT_CONFIG_PARAMETERS=",
	"GIT_CONFIG_COUNT=", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_",
}

// baseEnv is the environment every git command runs with: the tool
// allowlist of environ without repository overrides, and settings that make
// git non-interactive and its output stable. A non-empty sshCommand becomes
// GIT_SSH_COMMAND.
func baseEnv(environ []string, sshCommand string) []string {
	var env []string
	for _, kv := range procexec.ToolEnv(environ, nil) {
		if !hasAnyPrefix(kv, inheritedGitVars) {
			env = append(env, kv)
		}
	}
	env = append(env,
		"GIT_TERMINAL_PROMPT=0", // fail rather than ask for a password
		"GIT_LITERAL_PATHSPECS=1",
		"GIT_OPTIONAL_LOCKS=0",
		"LC_ALL=C", // stderr in English, for people and for classify
	)
	if sshCommand != "" {
		env = append(env, "GIT_SSH_COMMAND="+sshCommand)
	}
	return env
}

// run executes c with git's repository set to gitDir (none when empty).
// Cancellation returns ctx's error; a failure returns a *GitError, or
// ErrBranchNotFound wrapping one.
func run(ctx context.Context, base []string, gitDir string, c command) ([]byte, error) {
	args := c.args
	if gitDir != "" {
		args = append([]string{"--git-dir=" + gitDir}, args...)
	}
	cmd := procexec.Command(ctx, "git", args...)
	cmd.Env = append(append([]string(nil), base...), c.env...)
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	gerr := &GitError{Command: c.args[0], ExitCode: -1, Stderr: redact(strings.TrimSpace(stderr.String()), c.secrets)}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		gerr.ExitCode = exit.ExitCode()
	} else if gerr.Stderr == "" {
		gerr.Stderr = redact(err.Error(), c.secrets)
	}
	return nil, classify(gerr)
}

// classify recognises the failures callers act on from git's stderr; it is
// the one place that reads git's prose.
func classify(e *GitError) error {
	if e.Command == "fetch" && strings.Contains(e.Stderr, "couldn't find remote ref") {
		return fmt.Errorf("%w: %w", ErrBranchNotFound, e)
	}
	return e
}

// redact replaces every non-empty secret in s.
func redact(s string, secrets []string) string {
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}

// exitCode is the exit code of a failed git command, or -1.
func exitCode(err error) int {
	var gerr *GitError
	if errors.As(err, &gerr) {
		return gerr.ExitCode
	}
	return -1
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

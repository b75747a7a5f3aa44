package gitsource

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// ErrNeedsCredentials marks a repository an Anonymous cache may not, or
// could not, fetch: it needs what the server would fetch it with.
var ErrNeedsCredentials = errors.New("a preview of an unreviewed branch fetches modules without the server's git credentials: if the repository needs them, merge the branch, or ask an admin")

// An Anonymous cache fetches as nobody in particular:
//   - git runs with an environment of its own: PATH and the proxy
//     settings, a home folder that is empty (no ~/.gitconfig, its
//     credential helpers and url.insteadOf rewrites, no ~/.git-credentials),
//     no system config, no askpass, no ssh agent;
//   - only the file, git, http and https transports (GIT_ALLOW_PROTOCOL):
//     ssh always authenticates with the server's key, so an ssh or
//     scp-like URL is refused before git runs;
//   - into mirrors of its own (mirrors-anonymous/): a mirror fetched with
//     the server's credentials holds every commit of a private
//     repository, none of which an anonymous fetch may read.
//
// A repository that refuses such a fetch fails with ErrNeedsCredentials.

// anonymousURL refuses a URL whose transport authenticates as the server.
func anonymousURL(url string) error {
	lower := strings.ToLower(url)
	if strings.HasPrefix(lower, "ssh://") || strings.HasPrefix(lower, "git+ssh://") || strings.HasPrefix(lower, "ssh+git://") ||
		strings.HasPrefix(lower, "ext::") || scpLike.MatchString(url) {
		return fmt.Errorf("git over ssh authenticates with the server's key: %w", ErrNeedsCredentials)
	}
	return nil
}

// scpLike is git's user@host:path form (no scheme, a colon before any
// slash).
var scpLike = regexp.MustCompile(`^[^/:]+@[^/:]+:`)

// anonymousEnv is the environment of an anonymous clone or fetch.
func (c *Cache) anonymousEnv() ([]string, error) {
	home := filepath.Join(c.Dir, "anonymous-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	env := []string{
		"HOME=" + home, "XDG_CONFIG_HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_ALLOW_PROTOCOL=file:git:http:https", "GIT_ASKPASS=", "SSH_ASKPASS=",
		"GIT_SSH_COMMAND=false",
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(name) {
		case "PATH", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY":
			env = append(env, kv)
		}
	}
	return env, nil
}

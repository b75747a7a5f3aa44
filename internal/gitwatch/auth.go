package gitwatch

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// sshCommand is the GIT_SSH_COMMAND that authenticates with keyFile only,
// trusts a host the first time it is seen (and refuses a changed key
// afterwards), and never prompts. GIT_SSH_COMMAND is run by a shell, so the
// path is quoted.
func sshCommand(keyFile string) string {
	if keyFile == "" {
		return ""
	}
	return "ssh -i " + shellQuote(keyFile) +
		" -o IdentitiesOnly=yes -o StrictHostKeyChecking=accept-new -o BatchMode=yes"
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// token is an HTTPS credential read from Config.TokenFile.
type token struct {
	header  string   // the value of the Authorization header
	secrets []string // every form of it that could be printed
}

// readToken reads the token file. A file holding one word is a token sent
// as HTTP basic auth with the user "x-access-token" (what GitHub, GitLab and
// Gitea accept for access tokens); a file holding "<scheme> <credentials>",
// such as "Bearer abc", is sent as that header value verbatim. Errors name
// the file, never its content.
func readToken(path string) (token, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return token{}, fmt.Errorf("token file: %w", err)
	}
	raw := strings.TrimSpace(string(b))
	if raw == "" {
		return token{}, fmt.Errorf("token file %s is empty", path)
	}
	if strings.ContainsAny(raw, "\r\n") {
		return token{}, fmt.Errorf("token file %s holds more than one line", path)
	}
	t := token{header: raw, secrets: []string{raw}}
	if _, cred, ok := strings.Cut(raw, " "); ok {
		t.secrets = append(t.secrets, strings.TrimSpace(cred))
	} else {
		basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + raw))
		t.header = "Basic " + basic
		t.secrets = append(t.secrets, basic)
	}
	return t, nil
}

// env passes the header to git as configuration through the environment
// (like `git -c http.extraHeader=...`, but out of the argv that every user
// of the machine can read in the process list).
func (t token) env() []string {
	if t.header == "" {
		return nil
	}
	return []string{
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=http.extraHeader",
		"GIT_CONFIG_VALUE_0=Authorization: " + t.header,
	}
}

// urlSecrets are the parts of a repository URL that must not be printed:
// a password written into it.
func urlSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return nil
	}
	if p, ok := u.User.Password(); ok && p != "" {
		return []string{p, url.QueryEscape(p), url.PathEscape(p)}
	}
	return nil
}

// displayURL is raw with any password replaced, for messages.
func displayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "redacted")
	}
	return u.String()
}

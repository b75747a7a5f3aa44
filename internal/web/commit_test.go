package web

import (
	"testing"

	"knit.dev/knit/internal/view"
)

// TestCommitURL: a commit links to its page on a web host, with no
// credentials; a repository that is not on a web host gets no link.
func TestCommitURL(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	for repo, want := range map[string]string{
		"https://github.com/acme/infra":                  "https://github.com/acme/infra/commit/" + sha,
		"https://github.com/acme/infra.git":              "https://github.com/acme/infra/commit/" + sha,
		"https://x-access-token:s3cret@github.com/a/b/":  "https://github.com/a/b/commit/" + sha,
		"https://gitlab.example.com/group/sub/infra.git": "https://gitlab.example.com/group/sub/infra/-/commit/" + sha,
		"https://bitbucket.org/acme/infra":               "https://bitbucket.org/acme/infra/commits/" + sha,
		"http://git.internal:3000/acme/infra":            "http://git.internal:3000/acme/infra/commit/" + sha,
		"file:///srv/git/infra.git":                      "",
		"ssh://git@github.com/acme/infra.git":            "",
		"git@github.com:acme/infra.git":                  "",
		"/srv/git/infra":                                 "",
		"https://github.com":                             "",
		"https://github.com/acme":                        "",
		"":                                               "",
	} {
		if got := commitURL(repo, sha); got != want {
			t.Errorf("commitURL(%q) = %q, want %q", repo, got, want)
		}
	}
	if got := commitURL("https://github.com/a/b", "HEAD/../../evil"); got != "" {
		t.Errorf("a ref that is not a hash links to %q", got)
	}
}

// TestNewCommit: a revision from a commit shows its short hash, subject
// and link, taken from the source the server records (URL@COMMIT:PATH).
func TestNewCommit(t *testing.T) {
	const sha = "89abcdef0123456789abcdef0123456789abcdef"
	c := newCommit(view.Revision{Commit: sha, Message: "db: grow to 20 GB\n\nThe orders table outgrew it.\n",
		Source: "https://github.com/acme/infra.git@" + sha + ":envs/shop/dev.yaml"})
	if c == nil || c.Short != "89abcdef" || c.Subject != "db: grow to 20 GB" || c.URL != "https://github.com/acme/infra/commit/"+sha {
		t.Errorf("newCommit = %+v", c)
	}
	c = newCommit(view.Revision{Commit: sha, Message: "x", Source: "file:///srv/git/infra@" + sha + ":dev.yaml"})
	if c == nil || c.URL != "" || c.Short != "89abcdef" {
		t.Errorf("a file:// repository's commit: %+v", c)
	}
	if c := newCommit(view.Revision{Source: "/home/me/env.yaml"}); c != nil {
		t.Errorf("a revision from a file has commit %+v", c)
	}
}

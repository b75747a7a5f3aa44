package web

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// commit is the git commit a run applied, as the dashboard shows it.
type commit struct {
	Hash, Short, Subject string
	// URL is the commit's page on the repository's web host ("" for a
	// file://, ssh or scp-style repository, which has none).
	URL string
}

// newCommit describes rev's commit; nil for a revision not from git.
func newCommit(rev view.Revision) *commit {
	if rev.Commit == "" {
		return nil
	}
	c := &commit{Hash: rev.Commit, Short: rev.Commit[:min(8, len(rev.Commit))], Subject: firstLine(rev.Message)}
	c.URL = commitURL(repoOf(rev.Source, rev.Commit), rev.Commit)
	return c
}

// commitOf is the commit of revision n of env, looked up in revs (the
// revisions a page already read) before the store; nil when unknown. A
// store that fails is an error, not an unknown commit.
func (w *Web) commitOf(ctx context.Context, env string, revs []view.Revision, n int) (*commit, error) {
	if n <= 0 {
		return nil, nil
	}
	for _, r := range revs {
		if r.Number == n {
			return newCommit(r), nil
		}
	}
	rev, err := knit.NewRecords(w.k).Revision(ctx, env, n)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return newCommit(rev), nil
}

// repoOf takes the repository's URL out of a revision's source, which
// the server records as "URL@COMMIT:PATH".
func repoOf(source, sha string) string {
	i := strings.LastIndex(source, "@"+sha)
	if i <= 0 {
		return ""
	}
	return source[:i]
}

// commitURL is the page of commit sha on a web host (https://github.com/o/r
// → https://github.com/o/r/commit/SHA; GitLab's /-/commit/, Bitbucket's
// /commits/), without any credentials the repository URL carries; "" for a
// repository that is not on a web host (file://, ssh://, git@host:path) or
// a sha that is not a commit hash.
func commitURL(repo, sha string) string {
	if len(sha) < 7 || strings.Trim(sha, "0123456789abcdef") != "" {
		return ""
	}
	u, err := url.Parse(repo)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
		return ""
	}
	p := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), ".git")
	if !strings.Contains(strings.Trim(p, "/"), "/") { // no owner/repository
		return ""
	}
	switch host := strings.ToLower(u.Hostname()); {
	case strings.Contains(host, "gitlab"):
		p += "/-/commit/" + sha
	case host == "bitbucket.org":
		p += "/commits/" + sha
	default:
		p += "/commit/" + sha
	}
	out := url.URL{Scheme: u.Scheme, Host: u.Host, Path: p}
	return out.String()
}

// firstLine is a message's subject.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

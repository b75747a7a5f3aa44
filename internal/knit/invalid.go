package knit

import (
	"context"
	"errors"
	"strings"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// InvalidRevision is view.InvalidRevision: the HTTP client decodes it without linking the library.
type InvalidRevision = view.InvalidRevision

// InvalidOf is the newest revision of e when it is invalid, else nil. It
// reads the store only when e has a revision newer than the applied one.
func (k *Knit) InvalidOf(ctx context.Context, e store.Environment) (*InvalidRevision, error) {
	if e.Revision == 0 || e.Revision == e.AppliedRevision {
		return nil, nil
	}
	rev, err := k.store.Revision(ctx, e.ID, e.Revision)
	if err != nil {
		return nil, err
	}
	return invalidRevision(rev), nil
}

// invalidRevision is rev as an InvalidRevision, nil when rev is valid.
func invalidRevision(rev store.Revision) *InvalidRevision {
	if rev.Errors == "" {
		return nil
	}
	return &InvalidRevision{Env: rev.Env, Number: rev.Number, File: fileOf(rev.Source), Source: rev.Source, Commit: rev.Commit,
		Author: rev.Author, Message: rev.Message, Errors: SplitDiagnostics(rev.Errors), CreatedAt: rev.CreatedAt}
}

// fileOf is the file a revision's source names: the part after the commit
// of "URL@commit:path", or the source itself (a local file).
func fileOf(source string) string {
	if at := strings.LastIndex(source, "@"); at >= 0 {
		if _, path, ok := strings.Cut(source[at:], ":"); ok {
			return path
		}
	}
	return source
}

// SplitDiagnostics splits validation errors as diag.Diagnostics.String
// writes them (one a line, hints on indented lines after theirs) into one
// string per diagnostic.
func SplitDiagnostics(text string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if len(out) > 0 && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")) {
			out[len(out)-1] += "\n" + l
			continue
		}
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// NewestInvalid is environment id's newest revision when it is invalid,
// nil when it is valid or the environment does not exist.
func (rs *Records) NewestInvalid(ctx context.Context, id string) (*InvalidRevision, error) {
	k := rs.k
	e, err := k.store.Environment(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return k.InvalidOf(ctx, e)
}

package terraform

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	"knit.dev/knit/internal/runner"
)

// Fingerprint hashes what decides the component's result apart from the real
// world: the tool version, the module (for git, the resolved commit and
// folder; for OCI, the manifest digest and folder), the variables file, overlays, the inputs (as canonical JSON) and
// the backend knit writes. It hashes the content of every file that would
// land in the module folder, caching file hashes by path, size and mtime. It
// never runs the tool and writes nothing, but resolving a git source fetches
// it (no fetch for a full commit hash already cached).
func (r *Runner) Fingerprint(ctx context.Context, c runner.Component, in runner.Inputs) (string, error) {
	l, err := r.layout(ctx, c, in)
	if err != nil {
		return "", fmt.Errorf("fingerprint %s: %w", compName(c), err)
	}
	if wd, err := workDir(c); err == nil {
		r.layouts.put(wd, in, l)
	}
	sum, err := r.layoutHash(l, r.opts.ToolVersion, func(string) bool { return true })
	if err != nil {
		return "", fmt.Errorf("fingerprint %s: %w", compName(c), err)
	}
	// Secret inputs are in no file, but changing one must change the
	// fingerprint; secretDigest keys them, so the stored fingerprint does
	// not let anyone test guesses of a short secret.
	secret, err := r.secretDigest(l)
	if err != nil || secret == "" {
		return sum, err
	}
	h := sha256.Sum256([]byte(sum + "\nsecret " + secret))
	return hex.EncodeToString(h[:]), nil
}

// keyedDigest is an HMAC-SHA256 of data under key.
func keyedDigest(key, data []byte) string {
	mac := hmac.New(sha256.New, append([]byte("knit fingerprint\x00"), key...))
	mac.Write(data)
	return hex.EncodeToString(mac.Sum(nil))
}

// layoutHash hashes the tool version, the layout's commit and run folder,
// and the paths, modes and content of the files that match.
func (r *Runner) layoutHash(l *layout, tool string, match func(rel string) bool) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "knit/terraform v1\ntool %q\ncommit %q\nsub %q\n", tool, l.commit, l.sub)
	names := make([]string, 0, len(l.files))
	for rel := range l.files {
		if match(rel) {
			names = append(names, rel)
		}
	}
	sort.Strings(names)
	for _, rel := range names {
		f := l.files[rel]
		sum, err := r.hashes.sum(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%q %o %s\n", rel, f.mode, sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

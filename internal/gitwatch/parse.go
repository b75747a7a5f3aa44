package gitwatch

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// This file builds the read-only git commands a poll runs and parses their
// NUL-separated output. Nothing here runs git.

// logFormat prints one commit as NUL-separated fields; with -z commits end
// in NUL too, so the whole output is a flat list of fields. %G? and %GS
// are the signature's verdict and signer (G: a good signature by a key
// git trusts: for SSH, one of gpg.ssh.allowedSignersFile, %GS its
// principal).
const logFormat = "%H%x00%P%x00%an%x00%ae%x00%aI%x00%G?%x00%GS%x00%B"

const logFields = 8

func logArgs(revs ...string) []string {
	return append([]string{"log", "-z", "--format=" + logFormat}, revs...)
}

// commitInfo is one commit as git log describes it.
type commitInfo struct {
	hash                   string
	parents                []string
	author, email, message string
	signer                 string // the verified signer ("" unless %G? is G)
	time                   time.Time
}

func (c commitInfo) firstParent() string {
	if len(c.parents) == 0 {
		return ""
	}
	return c.parents[0]
}

func (c commitInfo) commit() Commit {
	return Commit{Hash: c.hash, Author: c.author, AuthorEmail: c.email, Signer: c.signer, Message: c.message, Time: c.time}
}

func parseLog(out []byte) ([]commitInfo, error) {
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(fields) == 1 && fields[0] == "" {
		return nil, nil
	}
	if len(fields)%logFields != 0 {
		return nil, fmt.Errorf("git log: %d fields, not a multiple of %d", len(fields), logFields)
	}
	var out2 []commitInfo
	for i := 0; i < len(fields); i += logFields {
		f := fields[i : i+logFields]
		t, err := time.Parse(time.RFC3339, f[4])
		if err != nil {
			return nil, fmt.Errorf("git log: commit %s: %w", f[0], err)
		}
		out2 = append(out2, commitInfo{
			hash: f[0], parents: strings.Fields(f[1]), author: f[2], email: f[3], time: t,
			message: strings.TrimRight(f[7], "\n"),
		})
		if f[5] == "G" {
			out2[len(out2)-1].signer = f[6]
		}
	}
	return out2, nil
}

// diffTreeArgs compares, for each "<commit> <parent>" line on stdin, the
// commit with that parent only, limited to prefix (the whole tree when "").
// --always prints the commit's hash even when nothing under prefix changed.
func diffTreeArgs(prefix string) []string {
	return append([]string{"diff-tree", "--stdin", "--always", "-r", "-z", "--no-renames", "--no-ext-diff", "--"}, pathspec(prefix)...)
}

// noMode is git's mode for "no file on this side".
const noMode = "000000"

// rawDiff is one entry of diff-tree's raw output.
type rawDiff struct {
	oldMode, newMode, newBlob, path string
}

// parseDiffTree reads "<commit>\0" headers, each followed by entries
// ":<old mode> <new mode> <old blob> <new blob> <status>\0<path>\0".
func parseDiffTree(out []byte) (map[string][]rawDiff, error) {
	byCommit := map[string][]rawDiff{}
	tokens := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	commit := ""
	for i := 0; i < len(tokens); i++ {
		tok := tokens[i]
		switch {
		case tok == "":
			continue
		case !strings.HasPrefix(tok, ":"):
			commit = tok
			byCommit[commit] = nil
			continue
		}
		f := strings.Fields(tok[1:])
		if len(f) != 5 || i+1 >= len(tokens) || commit == "" {
			return nil, fmt.Errorf("git diff-tree: unexpected entry %q", tok)
		}
		i++
		byCommit[commit] = append(byCommit[commit], rawDiff{oldMode: f[0], newMode: f[1], newBlob: f[3], path: tokens[i]})
	}
	return byCommit, nil
}

func lsTreeArgs(commit, prefix string) []string {
	return append([]string{"ls-tree", "-r", "-z", "--full-tree", commit, "--"}, pathspec(prefix)...)
}

// treeEntry is one line of ls-tree: "<mode> <type> <blob>\t<path>".
type treeEntry struct{ mode, blob, path string }

func parseLsTree(out []byte) ([]treeEntry, error) {
	var entries []treeEntry
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if line == "" {
			continue
		}
		meta, p, ok := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("git ls-tree: unexpected line %q", line)
		}
		entries = append(entries, treeEntry{mode: f[0], blob: f[2], path: p})
	}
	return entries, nil
}

// parseBatch reads cat-file --batch output: per object a header
// "<id> <type> <size>\n", the content and "\n".
func parseBatch(out []byte) (map[string][]byte, error) {
	blobs := map[string][]byte{}
	for len(out) > 0 {
		header, rest, ok := bytes.Cut(out, []byte("\n"))
		f := strings.Fields(string(header))
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("git cat-file: unexpected header %q", header)
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || size < 0 || size+1 > len(rest) {
			return nil, fmt.Errorf("git cat-file: bad size in %q", header)
		}
		blobs[f[0]] = rest[:size:size]
		out = rest[size+1:]
	}
	return blobs, nil
}

// pathspec limits a command to prefix; with GIT_LITERAL_PATHSPECS no
// character in it is a wildcard.
func pathspec(prefix string) []string {
	if prefix == "" {
		return nil
	}
	return []string{prefix}
}

func sortFileChanges(fs []fileChange) {
	sort.Slice(fs, func(i, j int) bool { return fs[i].path < fs[j].path })
}

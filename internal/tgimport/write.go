package tgimport

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteYAML prints the environments (checked: Text set) as YAML documents.
func WriteYAML(w io.Writer, res *Result) error {
	for i, im := range res.Environments {
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(im.Text); err != nil {
			return err
		}
	}
	return nil
}

// WriteFiles writes each environment (checked: Text set) to dir/FILE. It
// refuses, before writing any, when a file exists and force is false;
// each file is written whole or not at all (a temporary file renamed).
func WriteFiles(res *Result, dir string, force bool) error {
	if !force {
		for _, im := range res.Environments {
			p := filepath.Join(dir, im.File)
			if _, err := os.Lstat(p); err == nil {
				return fmt.Errorf("%s exists: the import replaces no file unless --force is given", p)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, im := range res.Environments {
		if err := writeFile(filepath.Join(dir, im.File), im.Text); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".knit-import-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// PrintReport says what the import wrote (into dir, when it wrote files)
// and every finding, grouped by unit.
func PrintReport(w io.Writer, res *Result, dir string) {
	for _, im := range res.Environments {
		where := im.File
		if dir != "" {
			where = filepath.Join(dir, im.File)
		}
		fmt.Fprintf(w, "environment %s (%s): %d components -> %s\n", im.Env.ID(), im.Folder, len(im.Env.Spec.Components), where)
	}
	if len(res.Findings) == 0 {
		fmt.Fprintln(w, "nothing left out")
		return
	}
	fmt.Fprintf(w, "not carried into knit (%d):\n", len(res.Findings))
	unit := "\x00"
	for _, f := range res.Findings {
		if f.Unit != unit {
			unit = f.Unit
			title := "tree"
			if unit != "" {
				title = "unit " + unit
			}
			fmt.Fprintf(w, "  %s:\n", title)
		}
		fmt.Fprintf(w, "    %s: %s: %s\n", f.Pos, f.What, f.Why)
	}
}

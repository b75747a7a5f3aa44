package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gruntwork-io/terragrunt/config"
	"github.com/gruntwork-io/terragrunt/config/hclparse"
	"github.com/gruntwork-io/terragrunt/options"
	"github.com/gruntwork-io/terragrunt/pkg/log"
	"github.com/gruntwork-io/terragrunt/pkg/log/format"
	"github.com/zclconf/go-cty/cty"
)

// parser evaluates units with Terragrunt's own configuration parser. One
// parser serves a whole tree (its context holds Terragrunt's caches of
// parsed files, so a root.hcl is parsed once); it is safe for concurrent
// use.
type parser struct {
	ctx   context.Context
	root  string // the tree's folder, symlinks resolved
	log   log.Logger
	stamp *stamper
}

func newParser(root string) *parser {
	return &parser{
		ctx:   config.WithConfigValues(context.Background()),
		root:  root,
		log:   log.New(log.WithOutput(io.Discard), log.WithLevel(log.ErrorLevel), log.WithFormatter(quietFormatter())),
		stamp: newStamper(root),
	}
}

// quietFormatter is a log formatter without colours (Terragrunt's parser
// asks its logger for one; the output is discarded anyway).
func quietFormatter() log.Formatter {
	f := format.NewFormatter(format.NewKeyValueFormatPlaceholders())
	f.SetDisabledColors(true)
	return f
}

// options are Terragrunt's options for parsing the unit at file: no
// environment variables of the importer's (get_env sees none), outputs
// never fetched, nothing interactive, output discarded.
func (p *parser) options(file string) (*options.TerragruntOptions, error) {
	opts, err := options.NewTerragruntOptionsWithConfigPath(file)
	if err != nil {
		return nil, err
	}
	opts.Env = map[string]string{}
	opts.SkipOutput = true
	opts.NonInteractive = true
	opts.Writer, opts.ErrWriter = io.Discard, io.Discard
	return opts, nil
}

// parsingContext is a context for one unit: the neutral functions in
// place of those that run commands or reach clouds, guarded ones in place
// of those that read files (guard.go; the parser stamps each file's calls
// for them, stamp.go), and outputs (the dependency values, see refs.go)
// in place of the ones Terragrunt would fetch by running tofu in each
// dependency.
func (p *parser) parsingContext(opts *options.TerragruntOptions, outputs *cty.Value) *config.ParsingContext {
	ctx := config.NewParsingContext(p.ctx, p.log, opts)
	ctx.ParserOptions = append(ctx.ParserOptions, hclparse.WithFileUpdate(p.stamp.update))
	fns := neutralFunctions(p.root, opts.WorkingDir)
	maps.Copy(fns, newGuard(p.root, opts.TerragruntConfigPath, ctx, p.log).functions())
	ctx.PredefinedFunctions = fns
	ctx.DecodedDependencies = outputs
	return ctx
}

// unit describes the unit whose configuration is file (absolute, inside
// the root).
func (p *parser) unit(file string) Unit {
	u := Unit{Path: p.rel(filepath.Dir(file)), File: p.rel(file)}
	cfg, files, err := p.evaluate(file)
	if err != nil {
		u.Error = p.relErr(err)
		return u
	}
	for _, f := range files[1:] {
		u.Includes = append(u.Includes, p.rel(f))
	}
	sc, err := scanFiles(p.root, files)
	if err != nil {
		u.Error = p.relErr(err)
		return u
	}
	p.fill(&u, cfg, sc)
	return u
}

// evaluate parses file twice: first only its includes and dependency
// blocks (as Terragrunt does to build its graph), to learn which files
// take part and so which dependency outputs they read; then fully, with
// those outputs standing in as markers. It returns the configuration and
// the files that took part, file first, each checked to be inside the root.
func (p *parser) evaluate(file string) (*config.TerragruntConfig, []string, error) {
	opts, err := p.options(file)
	if err != nil {
		return nil, nil, err
	}
	partial, err := config.PartialParseConfigFile(p.parsingContext(opts, nil).WithDecodeList(config.DependencyBlock), p.log, file, nil)
	if err != nil {
		return nil, nil, err
	}
	files, err := p.chain(file, partial)
	if err != nil {
		return nil, nil, err
	}
	refs, err := scanRefs(files)
	if err != nil {
		return nil, nil, err
	}
	outputs := refs.value()
	if opts, err = p.options(file); err != nil {
		return nil, nil, err
	}
	cfg, err := config.ParseConfigFile(p.parsingContext(opts, &outputs), p.log, file, nil)
	if err != nil {
		return nil, nil, err
	}
	if err := p.readInside(opts); err != nil {
		return nil, nil, err
	}
	return cfg, files, nil
}

// readInside refuses the unit when a file it read with
// read_terragrunt_config, read_tfvars_file or sops_decrypt_file (as
// Terragrunt records them) lies outside the root: what is imported comes
// from the tree alone.
func (p *parser) readInside(opts *options.TerragruntOptions) error {
	if opts.ReadFiles == nil {
		return nil
	}
	var err error
	opts.ReadFiles.Range(func(file string, _ []string) bool {
		if _, e := inside(p.root, file); e != nil {
			err = fmt.Errorf("it reads %w", e)
			return false
		}
		return true
	})
	return err
}

// chain is file and the files its includes name, in the order of its
// include blocks, every one refused unless it is inside the root.
func (p *parser) chain(file string, cfg *config.TerragruntConfig) ([]string, error) {
	files := []string{file}
	names := make([]string, 0, len(cfg.ProcessedIncludes))
	for name := range cfg.ProcessedIncludes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		inc := cfg.ProcessedIncludes[name]
		path := inc.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(file), path)
		}
		if _, err := inside(p.root, path); err != nil {
			return nil, fmt.Errorf("include %q: %w", name, err)
		}
		files = append(files, path)
	}
	return files, nil
}

// rel is path relative to the root, with forward slashes.
func (p *parser) rel(path string) string {
	r, err := filepath.Rel(p.root, path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(r)
}

// relErr is err's message with the root's folder left out of paths.
func (p *parser) relErr(err error) string {
	msg := strings.ReplaceAll(err.Error(), `Call to function "`+includePathFunc+`" failed: `, "")
	return strings.ReplaceAll(msg, p.root+string(filepath.Separator), "")
}

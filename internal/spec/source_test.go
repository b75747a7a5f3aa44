package spec

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestModuleSource(t *testing.T) {
	dir := filepath.FromSlash("/envs/shop")
	env := &Environment{Dir: dir}
	tests := []struct {
		name    string
		module  Module
		want    Source
		wantErr string
	}{
		{"local", Module{Source: "./modules/net"},
			Source{Kind: SourceLocal, Path: filepath.Join(dir, "modules/net")}, ""},
		{"local with path", Module{Source: "./modules", Path: "net"},
			Source{Kind: SourceLocal, Path: filepath.Join(dir, "modules/net")}, ""},
		{"local absolute inside the folder", Module{Source: "/envs/shop/modules/net"},
			Source{Kind: SourceLocal, Path: filepath.Join(dir, "modules/net")}, ""},
		{"local escaping", Module{Source: "../other/net"}, Source{}, `path "../other/net" leaves the environment's folder`},
		{"local escaping through path", Module{Source: "./modules", Path: "../../x"}, Source{}, `path "../../x" leaves the environment's folder`},
		{"local absolute outside", Module{Source: "/etc"}, Source{}, `path "/etc" leaves the environment's folder`},

		{"git https with ref and subdir", Module{Source: "git::https://example.com/org/infra.git//modules/vpc?ref=v1.2.0"},
			Source{Kind: SourceGit, URL: "https://example.com/org/infra.git", Ref: "v1.2.0", Subdir: "modules/vpc"}, ""},
		{"git ssh with ref", Module{Source: "git@github.com:terraform-aws-modules/terraform-aws-eks.git?ref=v19.4.2"},
			Source{Kind: SourceGit, URL: "git@github.com:terraform-aws-modules/terraform-aws-eks.git", Ref: "v19.4.2"}, ""},
		{"https without .git", Module{Source: "https://github.com/terraform-aws-modules/terraform-aws-vpc?ref=v3.19.0"},
			Source{Kind: SourceGit, URL: "https://github.com/terraform-aws-modules/terraform-aws-vpc", Ref: "v3.19.0"}, ""},
		{"github shorthand with subdir", Module{Source: "github.com/org/repo//sub/dir"},
			Source{Kind: SourceGit, URL: "https://github.com/org/repo", Subdir: "sub/dir"}, ""},
		{"file URL with subdir", Module{Source: "file:///srv/git/infra//net"},
			Source{Kind: SourceGit, URL: "file:///srv/git/infra", Subdir: "net"}, ""},
		{"git with path and version", Module{Source: "git@github.com:o/r.git//modules", Path: "vpc", Version: "v2"},
			Source{Kind: SourceGit, URL: "git@github.com:o/r.git", Ref: "v2", Subdir: "modules/vpc"}, ""},
		{"ref in URL wins over version", Module{Source: "git@github.com:o/r.git?ref=v1", Version: "v2"},
			Source{Kind: SourceGit, URL: "git@github.com:o/r.git", Ref: "v1"}, ""},
		{"bad query", Module{Source: "git@github.com:o/r.git?ref=%zz"}, Source{}, `bad query in git source`},
		{"empty git source", Module{Source: "git::"}, Source{}, "empty git source"},

		{"aws shorthand", Module{Source: "aws", Name: "vpc"},
			Source{Kind: SourceGit, URL: "https://github.com/terraform-aws-modules/terraform-aws-vpc.git"}, ""},
		{"aws shorthand with version and path", Module{Source: "aws", Name: "s3-bucket", Version: "3.6.0", Path: "modules/notification"},
			Source{Kind: SourceGit, URL: "https://github.com/terraform-aws-modules/terraform-aws-s3-bucket.git", Ref: "v3.6.0", Subdir: "modules/notification"}, ""},
		{"aws shorthand with v-version", Module{Source: "aws", Name: "vpc", Version: "v5.0.0"},
			Source{Kind: SourceGit, URL: "https://github.com/terraform-aws-modules/terraform-aws-vpc.git", Ref: "v5.0.0"}, ""},
		{"aws shorthand without name", Module{Source: "aws"}, Source{}, `source "aws" needs module.name`},

		{"registry", Module{Source: "terraform-aws-modules/vpc/aws", Version: "5.0.0"},
			Source{Kind: SourceRegistry, URL: "terraform-aws-modules/vpc/aws", Ref: "5.0.0"}, ""},
		{"registry with host", Module{Source: "app.terraform.io/acme/vpc/aws"},
			Source{Kind: SourceRegistry, URL: "app.terraform.io/acme/vpc/aws"}, ""},
		{"registry with host, port and folder", Module{Source: "registry.localhost:8443/acme/vpc/local//modules/sub", Path: "x", Version: "~> 1.1"},
			Source{Kind: SourceRegistry, URL: "registry.localhost:8443/acme/vpc/local", Ref: "~> 1.1", Subdir: "modules/sub/x"}, ""},
		{"four parts without a host", Module{Source: "nohost/acme/vpc/aws"}, Source{}, `cannot tell what kind of module source`},

		{"unknown", Module{Source: "vpc"}, Source{}, `cannot tell what kind of module source "vpc" is`},
		{"unknown scheme", Module{Source: "ftp://example.com/x.zip"}, Source{}, `cannot tell what kind of module source`},
		{"empty", Module{}, Source{}, "module.source is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := env.ModuleSource(&tt.module)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ModuleSource(%+v) = %+v, %v; want error containing %q", tt.module, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ModuleSource(%+v): %v", tt.module, err)
			}
			if got != tt.want {
				t.Errorf("ModuleSource(%+v)\n  = %+v\nwant %+v", tt.module, got, tt.want)
			}
		})
	}
}

func TestLocalPath(t *testing.T) {
	env := &Environment{Dir: filepath.FromSlash("/envs/shop")}
	for _, p := range []string{"vars/a.tfvars", "./vars/../vars/a.tfvars", ".", "a..b/c"} {
		if _, err := env.LocalPath(p); err != nil {
			t.Errorf("LocalPath(%q): %v", p, err)
		}
	}
	for _, p := range []string{"..", "../x", "vars/../../x", "/etc/passwd", "/envs/shopping/x"} {
		if got, err := env.LocalPath(p); err == nil {
			t.Errorf("LocalPath(%q) = %q, want an error: it leaves the folder", p, got)
		}
	}
}

func TestEscapes(t *testing.T) {
	for p, want := range map[string]bool{
		"": false, "a": false, "a/b": false, "a..b": false, "./a": false, "a/../b": false,
		"..": true, "../a": true, "a/../../b": true, "/abs": true,
	} {
		if got := escapes(p); got != want {
			t.Errorf("escapes(%q) = %v, want %v", p, got, want)
		}
	}
}

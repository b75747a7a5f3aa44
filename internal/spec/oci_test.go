package spec

import (
	"strings"
	"testing"
)

func TestOCIModuleSource(t *testing.T) {
	dig := "sha256:" + strings.Repeat("ab", 32)
	e := &Environment{Dir: t.TempDir()}
	for _, tc := range []struct {
		m       Module
		want    Source
		wantErr string
	}{
		{m: Module{Source: "oci://reg.example.com/mods/vpc?tag=v1"}, want: Source{Kind: SourceOCI, URL: "reg.example.com/mods/vpc", Ref: "v1"}},
		{m: Module{Source: "oci://127.0.0.1:5000/mods/vpc?digest=" + dig}, want: Source{Kind: SourceOCI, URL: "127.0.0.1:5000/mods/vpc", Ref: dig}},
		{m: Module{Source: "oci://reg.example.com/mods/net//vpc", Version: "2.0.0", Path: "x"}, want: Source{Kind: SourceOCI, URL: "reg.example.com/mods/net", Ref: "2.0.0", Subdir: "vpc/x"}},
		{m: Module{Source: "oci://reg.example.com/mods/vpc"}, want: Source{Kind: SourceOCI, URL: "reg.example.com/mods/vpc", Ref: "latest"}},
		{m: Module{Source: "oci://reg.example.com/mods/vpc?tag=v1&digest=" + dig}, wantErr: "both a tag and a digest"},
		{m: Module{Source: "oci://reg.example.com/mods/vpc?digest=sha256:abc"}, wantErr: "64 lowercase hex"},
		{m: Module{Source: "oci://reg.example.com/mods/vpc?tag=-bad"}, wantErr: "not a valid OCI tag"},
		{m: Module{Source: "oci://reg.example.com/mods/vpc?ref=v1"}, wantErr: `unknown argument "ref"`},
		{m: Module{Source: "oci://reg.example.com/Mods/VPC?tag=v1"}, wantErr: "not host/repository"},
		{m: Module{Source: "oci://reg.example.com?tag=v1"}, wantErr: "not host/repository"},
		{m: Module{Source: "oci://reg.example.com/mods/vpc", Version: "../x"}, wantErr: "not an OCI tag"},
	} {
		got, err := e.ModuleSource(&tc.m)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%+v: err %v, want %q", tc.m, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%+v: %+v %v, want %+v", tc.m, got, err, tc.want)
		}
	}
}

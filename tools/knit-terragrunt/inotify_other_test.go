//go:build !linux

package main

import "testing"

// opens is a no-op where there is no inotify: the tests then check only
// the errors and the description.
type opens struct{}

func watchOpens(*testing.T, ...string) *opens { return &opens{} }

func (*opens) opened() []string { return nil }

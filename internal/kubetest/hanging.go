package kubetest

import (
	"fmt"
	"net"
	"testing"
)

// Hanging starts a loopback "API server" that accepts connections and
// never answers, and returns a kubeconfig for it: what a test of a
// timeout points a runner at. It stops when the test ends.
func Hanging(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn // open, never answered
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"http://%s\"}}]\n"+
		"contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t0k3n}}]\ncurrent-context: c\n", ln.Addr())
}

package cli

import (
	"strings"
	"testing"
	"time"
)

// The config file's http block becomes the server's limits; a bad value
// is an error naming the field.
func TestServeConfigHTTPLimits(t *testing.T) {
	var c serveConfig
	c.HTTP.ReadTimeout, c.HTTP.IdleTimeout, c.HTTP.StreamWriteTimeout, c.HTTP.MaxConnections, c.HTTP.MaxBodyMB = "5s", "1m", "20s", 64, 2
	l, err := c.httpLimits()
	if err != nil || l.ReadTimeout != 5*time.Second || l.IdleTimeout != time.Minute || l.WriteTimeout != 20*time.Second ||
		l.MaxConns != 64 || l.MaxBodyBytes != 2<<20 {
		t.Fatalf("limits %+v %v", l, err)
	}
	c.HTTP.IdleTimeout = "soon"
	if _, err := c.httpLimits(); err == nil || !strings.Contains(err.Error(), "http.idleTimeout") {
		t.Fatalf("bad idleTimeout: %v", err)
	}
}

// --ttl-warn-before (knit.yaml ttlWarnBefore) becomes the ttl
// controller's lead time; a bad or non-positive one is an error naming it.
func TestServeConfigTTLWarnBefore(t *testing.T) {
	c := serveConfig{TTLWarnBefore: "2h"}
	ctl, err := c.controllers(t.Context(), t.TempDir(), nil)
	if err != nil || ctl.TTL.WarnBefore != 2*time.Hour {
		t.Fatalf("warn before: %v %v", ctl.TTL.WarnBefore, err)
	}
	for _, bad := range []string{"soon", "0s", "-1h"} {
		c.TTLWarnBefore = bad
		if _, err := c.controllers(t.Context(), t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "--ttl-warn-before") {
			t.Fatalf("--ttl-warn-before %s: %v", bad, err)
		}
	}
}

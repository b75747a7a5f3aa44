package pgtest

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestClusterLifecycle: a cluster serves its databases on loopback with a
// password, and is stopped and removed when its test ends.
func TestClusterLifecycle(t *testing.T) {
	var c *Cluster
	t.Run("use", func(t *testing.T) {
		c = Start(t)
		dsn := c.DB(t)
		conn, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var addr string
		if err := conn.QueryRow(t.Context(), `SELECT host(inet_server_addr())`).Scan(&addr); err != nil || addr != "127.0.0.1" {
			t.Errorf("server address %q (%v), want 127.0.0.1", addr, err)
		}
		wrong := strings.Replace(dsn, c.Password, "not-the-password", 1)
		if _, err := pgx.Connect(t.Context(), wrong); err == nil {
			t.Error("connected over TCP with a wrong password")
		}
	})
	if c == nil {
		// "use" failed, or skipped naming make tools (never in CI): it
		// said why; there is no cluster whose end to check.
		return
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("the cluster's folder %s is still there (%v)", c.Dir, err)
	}
	if conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port))); err == nil {
		conn.Close()
		t.Errorf("port %d still accepts connections after the test ended", c.Port)
	}
}

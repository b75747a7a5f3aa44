package kubecontroller_test

import (
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"knit.dev/knit/internal/kubecontroller"
	"knit.dev/knit/internal/testtools/ocireg"
)

func ociEnv(name, source, content string) string {
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: ` + name + `}
spec:
  teamName: qa
  envName: ` + name + `
  autoApprove: true
  components:
    - name: file
      type: terraform
      module: {source: "` + source + `"}
      variables:
        - {name: path, value: FILES/` + name + `.txt}
        - {name: content, value: "` + content + `"}
`
}

func TestModuleFromOCI(t *testing.T) {
	h := start(t)
	reg := ocireg.Start(t) // Debian's docker-registry
	reg.PushModule(t, "modules/file", "v1", map[string]string{"main.tf": fileModule})
	addr := "oci://" + reg.Host + "/modules/file"

	h.apply(ociEnv("fromoci", addr+"?tag=v1", "from oci"))
	h.waitEnv("fromoci", "Ready=True", condIs(kubecontroller.CondReady, metav1.ConditionTrue))
	if got, _ := readFile(t, filepath.Join(h.files, "fromoci.txt")); got != "from oci" {
		t.Errorf("fromoci.txt = %q", got)
	}

	// A tag the registry does not have: not Ready, the reason names the
	// address, nothing applied.
	h.apply(ociEnv("notag", addr+"?tag=v9", "never"))
	e := h.waitEnv("notag", "Ready=False naming the tag", func(e *kubecontroller.Environment) bool {
		return condIs(kubecontroller.CondReady, metav1.ConditionFalse)(e) && strings.Contains(describe(e), "modules/file at v9")
	})
	if !strings.Contains(describe(e), "no such tag") {
		t.Errorf("status does not say the tag is unknown:\n%s", describe(e))
	}
	if _, ok := readFile(t, filepath.Join(h.files, "notag.txt")); ok {
		t.Error("an unknown tag applied something")
	}
}

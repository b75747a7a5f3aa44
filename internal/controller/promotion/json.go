package promotion

import (
	"bytes"
	"encoding/json"
)

func jsonOf(v map[string]any) ([]byte, error) { return json.Marshal(v) }

// paramsOf decodes a release's parameters, numbers kept as written.
func paramsOf(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	for k, v := range m {
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				m[k] = i
			} else if f, err := n.Float64(); err == nil {
				m[k] = f
			}
		}
	}
	return m, nil
}

package spec

// Chart values as Helm merges them, for knit validate's schema check and
// the helm runner alike.

// MergeValues sets src over dst, maps merged key by key, as Helm
// coalesces values.
func MergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				MergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// SetValue sets the value at path, making the maps on the way.
func SetValue(m map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// CopyValues copies maps and lists deeply: merging must not change the
// component's own values.
func CopyValues(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = CopyValues(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = CopyValues(e)
		}
		return out
	}
	return v
}

package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Ref names one object.
type Ref struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// RefOf returns the reference of obj.
func RefOf(obj *unstructured.Unstructured) Ref {
	return Ref{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// GVK returns the reference's group, version and kind.
func (r Ref) GVK() schema.GroupVersionKind { return schema.FromAPIVersionAndKind(r.APIVersion, r.Kind) }

// Address is how plans name the object: Kind/namespace/name, or Kind/name
// for a cluster-scoped object.
func (r Ref) Address() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// key identifies the object across API versions of one group.
func (r Ref) key() string {
	return r.GVK().Group + "/" + r.Address()
}

// Inventory is the list of objects a manifests component applied, kept in
// its work dir so that an object removed from its files can be pruned. It
// holds names only, never content.
type Inventory struct {
	Objects []Ref `json:"objects"`
}

const inventoryFile = "inventory.json"

// LoadInventory reads the inventory in dir; none is an empty inventory.
func LoadInventory(dir string) (Inventory, error) {
	var inv Inventory
	b, err := os.ReadFile(filepath.Join(dir, inventoryFile))
	if errors.Is(err, os.ErrNotExist) {
		return inv, nil
	}
	if err != nil {
		return inv, err
	}
	if err := json.Unmarshal(b, &inv); err != nil {
		return inv, fmt.Errorf("inventory %s: %w", filepath.Join(dir, inventoryFile), err)
	}
	return inv, nil
}

// Save writes the inventory to dir atomically.
func (inv Inventory) Save(dir string) error {
	b, err := json.MarshalIndent(inv, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, inventoryFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, inventoryFile))
}

// Missing returns the refs of inv that are not in keep.
func (inv Inventory) Missing(keep []Ref) []Ref {
	have := map[string]bool{}
	for _, r := range keep {
		have[r.key()] = true
	}
	var out []Ref
	for _, r := range inv.Objects {
		if !have[r.key()] {
			out = append(out, r)
		}
	}
	return out
}

// Union returns the refs of a and b, each once.
func Union(a, b []Ref) []Ref {
	seen := map[string]bool{}
	var out []Ref
	for _, l := range [][]Ref{a, b} {
		for _, r := range l {
			if !seen[r.key()] {
				seen[r.key()] = true
				out = append(out, r)
			}
		}
	}
	return out
}

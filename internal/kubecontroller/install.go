package kubecontroller

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InstallCRDs applies CRDs() to the cluster (server-side apply, knit owning
// its fields) and waits until the API server serves them, or ctx ends.
// It returns the names of the CRDs.
func InstallCRDs(ctx context.Context, cfg *rest.Config) ([]string, error) {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, crd := range CRDs() {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&crd)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: m}
		delete(u.Object, "status")
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("knit"), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("apply CRD %s: %w", crd.Name, err)
		}
		names = append(names, crd.Name)
	}
	for _, name := range names {
		if err := waitEstablished(ctx, c, name); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// waitEstablished waits for the CRD's Established condition.
func waitEstablished(ctx context.Context, c client.Client, name string) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
			return fmt.Errorf("CRD %s: %w", name, err)
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s is not established: %w", name, ctx.Err())
		case <-tick.C:
		}
	}
}

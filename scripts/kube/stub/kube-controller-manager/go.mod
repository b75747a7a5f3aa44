module k8s.io/kube-controller-manager

go 1.22

module k8s.io/kube-proxy

go 1.22

module k8s.io/endpointslice

go 1.22

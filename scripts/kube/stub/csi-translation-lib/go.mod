module k8s.io/csi-translation-lib

go 1.22

cidr         = "10.20.0.0/16"
subnet_count = 3

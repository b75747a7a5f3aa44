locals {
  aws_region = "us-east-1"
}

locals {
  environment = "stage"
}

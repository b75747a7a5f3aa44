locals {
  environment = "qa"
}

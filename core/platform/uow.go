package platform

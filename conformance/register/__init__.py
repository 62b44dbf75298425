"""`petstore-conformance register`: a certification body's register of signed packages."""

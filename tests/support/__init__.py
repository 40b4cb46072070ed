"""What the tests share: the lanes rule (lanes), and helpers more than one test module uses."""

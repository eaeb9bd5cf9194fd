"""Guest and company profiles and a guest's payment methods."""

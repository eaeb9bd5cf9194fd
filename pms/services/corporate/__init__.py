"""Corporate accounts: company users, payment methods with approval, billing, credit limits and overrides."""

"""Distribution: availability, rates and inventory (ARI) events, their digest and re-push to channels."""

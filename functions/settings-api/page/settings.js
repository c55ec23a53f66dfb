// settings page script (placeholder)

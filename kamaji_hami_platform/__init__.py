"""kamaji-hami-platform: components, pure renderers and the GPU fit model."""

@bounded_docker@
node=@node@

node=@node@

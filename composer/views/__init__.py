"""The composer's console pages: dashboard, pools, jobs (routes in `composer.views.urls`)."""
